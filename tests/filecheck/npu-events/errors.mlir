// RUN: %opt %s -p npu-events --verify-diagnostics -o /dev/null

// A task placed on a core the arch does not have: the task's verifier rejects it
// before npu-events (which checks it too) runs.
builtin.module attributes {npu.arch = #npu.arch<cores = 2>} {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    // expected-error @+1 {{'npu_task.task' k0: core 3 is out of range [0, 2) (cores of the arch)}}
    npu_task.task "k0" attributes {core = 3 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    } loc("conv0")
    func.return
  }
}
