// RUN: %opt %s --split-input-file -p npu-schedule | filecheck %s

// A concurrent branch holds core 0: "side" (one core, 5000 cycles) and "wide"
// (4 parts, 3000 cycles on 4 cores) both read nothing written by the other. On 4
// cores "wide" would end at 5000 + 3000 (its fourth part waits for core 0); on the
// three free cores its span is 4000 (`part_cycles`), so it runs there in 3 parts.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    npu_task.task "side" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "wide" attributes {core = 0 : i64, range = array<i64: 0, 12>, predicted_cycles = 3000 : i64, parts = 4 : i64, part_cycles = array<i64: 10000, 5500, 4000, 3000>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK:      npu_task.task "side" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64}
// CHECK-NEXT: ^bb0
// CHECK:      npu_task.task "wide" attributes {core = 1 : i64, range = array<i64: 0, 4>, predicted_cycles = 4000 : i64
// CHECK:      npu_task.task "wide" attributes {core = 2 : i64, range = array<i64: 4, 8>, predicted_cycles = 4000 : i64
// CHECK:      npu_task.task "wide" attributes {core = 3 : i64, range = array<i64: 8, 12>, predicted_cycles = 4000 : i64
// CHECK-NOT:  npu_task.task "wide"

// -----

// Must not fire: the span on three cores (9000) ends later than waiting for
// core 0 (5000 + 3000), so "wide" keeps its 4 parts, the last one on core 0.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    npu_task.task "side" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "wide" attributes {core = 0 : i64, range = array<i64: 0, 12>, predicted_cycles = 3000 : i64, parts = 4 : i64, part_cycles = array<i64: 30000, 15000, 9000, 3000>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK:      npu_task.task "side" attributes {core = 0 : i64
// CHECK:      npu_task.task "wide" attributes {core = 1 : i64, range = array<i64: 0, 3>, predicted_cycles = 3000 : i64
// CHECK:      npu_task.task "wide" attributes {core = 2 : i64, range = array<i64: 3, 6>
// CHECK:      npu_task.task "wide" attributes {core = 3 : i64, range = array<i64: 6, 9>
// CHECK:      npu_task.task "wide" attributes {core = 0 : i64, range = array<i64: 9, 12>

// -----

// Must not fire: without `part_cycles` (no span known on fewer cores) the parts
// stay 4, even with core 0 busy.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    npu_task.task "side" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "wide" attributes {core = 0 : i64, range = array<i64: 0, 12>, predicted_cycles = 3000 : i64, parts = 4 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK:      npu_task.task "wide" attributes {core = 1 : i64, range = array<i64: 0, 3>
// CHECK:      npu_task.task "wide" attributes {core = 0 : i64, range = array<i64: 9, 12>
