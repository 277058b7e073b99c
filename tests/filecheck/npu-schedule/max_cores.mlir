// RUN: %opt %s -p 'npu-schedule{max-cores=1}' | filecheck %s --check-prefix=ONE

// max-cores=1 keeps everything on core 0.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    npu_task.task "big" attributes {core = 0 : i64, range = array<i64: 0, 8>, predicted_cycles = 80000 : i64, parts = 4 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}
// ONE:     npu_task.task "big" attributes {core = 0 : i64, range = array<i64: 0, 8>, predicted_cycles = 80000 : i64, parts = 4 : i64}
// ONE-NOT: npu_task.task
