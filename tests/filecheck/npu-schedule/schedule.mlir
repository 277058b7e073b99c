// RUN: %opt %s --split-input-file -p npu-schedule | filecheck %s

// The cost model (npu-tile) asked for 4 parts: 8 parallel tiles become 4
// balanced ranges, one per core; each part is predicted to take the kernel's
// span (npu-tile's predicted_cycles of a split kernel).
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
// CHECK:      npu_task.task "big" attributes {core = 0 : i64, range = array<i64: 0, 2>, predicted_cycles = 80000 : i64, parts = 4 : i64}
// CHECK:      npu_task.task "big" attributes {core = 1 : i64, range = array<i64: 2, 4>, predicted_cycles = 80000 : i64, parts = 4 : i64}
// CHECK:      npu_task.task "big" attributes {core = 2 : i64, range = array<i64: 4, 6>, predicted_cycles = 80000 : i64, parts = 4 : i64}
// CHECK:      npu_task.task "big" attributes {core = 3 : i64, range = array<i64: 6, 8>, predicted_cycles = 80000 : i64, parts = 4 : i64}
// CHECK-NOT:  npu_task.task
// CHECK:      // {{-}}----

// -----

// No split requested (the cost model saw no gain over the sync cost): the kernel stays whole.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    npu_task.task "small" attributes {core = 0 : i64, range = array<i64: 0, 8>, predicted_cycles = 120 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}
// CHECK:      npu_task.task "small" attributes {core = 0 : i64, range = array<i64: 0, 8>, predicted_cycles = 120 : i64}
// CHECK-NOT:  npu_task.task
// CHECK:      // {{-}}----

// -----

// 4 parts requested but only 3 tiles: 3 parts.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    npu_task.task "three" attributes {core = 0 : i64, range = array<i64: 0, 3>, predicted_cycles = 3000 : i64, parts = 4 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}
// CHECK:      npu_task.task "three" attributes {core = 0 : i64, range = array<i64: 0, 1>
// CHECK:      npu_task.task "three" attributes {core = 1 : i64, range = array<i64: 1, 2>
// CHECK:      npu_task.task "three" attributes {core = 2 : i64, range = array<i64: 2, 3>
// CHECK-NOT:  npu_task.task
// CHECK:      // {{-}}----

// -----

// Two independent single-tile kernels run side by side on two cores; their
// consumer goes where its inputs finish first.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    %a = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc : memref<64xf32, "dram">
    npu_task.task "left" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %a[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    npu_task.task "right" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %b[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    npu_task.task "join" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %a[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
      %u = npu_dma.copy %b[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %u
    }
    func.return
  }
}
// CHECK: npu_task.task "left" attributes {core = 0 : i64
// CHECK: npu_task.task "right" attributes {core = 1 : i64
// CHECK: npu_task.task "join" attributes {core = 0 : i64

