// RUN: %opt %s --split-input-file -p npu-task-canonicalize | filecheck %s

// Two loads of adjacent row blocks of one source into adjacent rows of one buffer,
// back to back: one load of both blocks, one wait. The second block's offsets may be
// index math on the first's (%r + 2).
builtin.module {
  func.func @main(%x: memref<8x32xf32, "dram">) {
    npu_task.task "rows" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %r = arith.muli %lo, %c2 : index
      %t1 = npu_dma.copy %x[%r, %c0] -> %a[%c0, %c0] {sizes = array<i64: 2, 32>, pad_value = 0.000000e+00 : f32} : memref<8x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %r2 = arith.addi %r, %c2 : index
      %t2 = npu_dma.copy %x[%r2, %c0] -> %a[%c2, %c0] {sizes = array<i64: 2, 32>, pad_value = 0.000000e+00 : f32} : memref<8x32xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %t1
      npu_dma.wait %t2
      npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
    }
    func.return
  }
}
// CHECK:      %[[R:.*]] = arith.muli %lo, %c2 : index
// CHECK-NEXT: %[[T:.*]] = npu_dma.copy %x[%[[R]], %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>, pad_value = 0.000000e+00 : f32}
// CHECK-NEXT: npu_dma.wait %[[T]]
// CHECK-NEXT: npu_compute.eltwise relu

// -----

// Columns in the other order (the second copy's window comes first): joined at the
// lower offsets; constant offsets.
builtin.module {
  func.func @main(%x: memref<4x64xf32, "dram">) {
    npu_task.task "cols" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %c48 = arith.constant 48 : index
      %c32 = arith.constant 32 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %t1 = npu_dma.copy %x[%c0, %c48] -> %a[%c0, %c16] {sizes = array<i64: 4, 16>} : memref<4x64xf32, "dram"> -> memref<4x32xf32, "sram">
      %t2 = npu_dma.copy %x[%c0, %c32] -> %a[%c0, %c0] {sizes = array<i64: 4, 16>} : memref<4x64xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %t2
      npu_dma.wait %t1
      npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
    }
    func.return
  }
}
// CHECK:      %[[T:.*]] = npu_dma.copy %x[%c0, %c32] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>}
// CHECK-NEXT: npu_dma.wait %[[T]]
// CHECK-NEXT: npu_compute.eltwise

// -----

// Must not fire, each copy with the one before it: a wait between them (%t2); a gap
// between the windows (%t4); another destination (%t5); adjacent rows in the
// destination only, and other columns (%t6); another source (%t7); an in-buffer shift
// of adjacent rows (%t8: source and destination are one buffer, a merged copy could
// read rows it writes).
builtin.module {
  func.func @main(%x: memref<8x32xf32, "dram">) {
    npu_task.task "apart" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c16 = arith.constant 16 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %b = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %t1 = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 2, 32>} : memref<8x32xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %t1
      %t2 = npu_dma.copy %x[%c2, %c0] -> %a[%c2, %c0] {sizes = array<i64: 2, 32>} : memref<8x32xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %t2
      %t3 = npu_dma.copy %x[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 1, 32>} : memref<8x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %t4 = npu_dma.copy %x[%c2, %c0] -> %b[%c2, %c0] {sizes = array<i64: 1, 32>} : memref<8x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %t5 = npu_dma.copy %x[%c3, %c0] -> %a[%c0, %c0] {sizes = array<i64: 1, 32>} : memref<8x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %t6 = npu_dma.copy %x[%c3, %c16] -> %a[%c1, %c16] {sizes = array<i64: 1, 16>} : memref<8x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %t7 = npu_dma.copy %a[%c2, %c0] -> %a[%c0, %c0] {sizes = array<i64: 1, 32>} : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      %t8 = npu_dma.copy %a[%c3, %c0] -> %a[%c1, %c0] {sizes = array<i64: 1, 32>} : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %t3
      npu_dma.wait %t4
      npu_dma.wait %t5
      npu_dma.wait %t6
      npu_dma.wait %t7
      npu_dma.wait %t8
    }
    func.return
  }
}
// CHECK-COUNT-8: npu_dma.copy
// CHECK-NOT:     npu_dma.copy
