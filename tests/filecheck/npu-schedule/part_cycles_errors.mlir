// RUN: %opt %s -p npu-schedule --verify-diagnostics -o /dev/null

// `part_cycles` gives a span for each count of cores up to `parts`, or the
// verifier names the task and what it got.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    // expected-error @+1 {{'npu_task.task' wide: part_cycles must give a span, at least 0, for each of 1..4 cores (parts), got [10000, 3000]}}
    npu_task.task "wide" attributes {core = 0 : i64, range = array<i64: 0, 12>, predicted_cycles = 3000 : i64, parts = 4 : i64, part_cycles = array<i64: 10000, 3000>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
    }
    func.return
  }
}
