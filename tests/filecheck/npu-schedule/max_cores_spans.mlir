// RUN: %opt %s -p 'npu-schedule{max-cores=2}' | filecheck %s

// npu-tile split "wide" in 4 parts (3000 cycles on 4 cores); with max-cores=2 it runs
// in 2 parts, each predicted at its span on 2 cores from `part_cycles` (5500), not at
// the span on 4.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    npu_task.task "wide" attributes {core = 0 : i64, range = array<i64: 0, 12>, predicted_cycles = 3000 : i64, parts = 4 : i64, part_cycles = array<i64: 10000, 5500, 4000, 3000>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK:      npu_task.task "wide" attributes {core = 0 : i64, range = array<i64: 0, 6>, predicted_cycles = 5500 : i64
// CHECK:      npu_task.task "wide" attributes {core = 1 : i64, range = array<i64: 6, 12>, predicted_cycles = 5500 : i64
// CHECK-NOT:  npu_task.task "wide"
