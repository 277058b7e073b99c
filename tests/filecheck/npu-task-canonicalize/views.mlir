// RUN: %opt %s --split-input-file -p npu-task-canonicalize | filecheck %s

// A view of a buffer as its own type is the buffer; a reshape and an offset slice stay.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %y: memref<2x64xf32, "dram">) {
    %same = npu_task.view %x : memref<4x32xf32, "dram"> to memref<4x32xf32, "dram">
    %flat = npu_task.view %x : memref<4x32xf32, "dram"> to memref<2x64xf32, "dram">
    %part = npu_task.view %x {offset = 256 : i64} : memref<4x32xf32, "dram"> to memref<2x32xf32, "dram">
    npu_task.task "copy" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %b = npu_task.sram {offset = 512 : i64} : memref<2x32xf32, "sram">
      %t = npu_dma.copy %same[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %u = npu_dma.copy %part[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 2, 32>} : memref<2x32xf32, "dram"> -> memref<2x32xf32, "sram">
      %v = npu_dma.copy %flat[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 2, 64>} : memref<2x64xf32, "dram"> -> memref<2x64xf32, "dram">
      npu_dma.wait %t
      npu_dma.wait %u
      npu_dma.wait %v
    }
    func.return
  }
}
// CHECK:      func.func @main(%x: memref<4x32xf32, "dram">, %y: memref<2x64xf32, "dram">) {
// CHECK-NEXT:   %flat = npu_task.view %x : memref<4x32xf32, "dram"> to memref<2x64xf32, "dram">
// CHECK-NEXT:   %part = npu_task.view %x {offset = 256 : i64}
// CHECK:        npu_dma.copy %x[%c0, %c0] -> %a
// CHECK:        npu_dma.copy %part[%c0, %c0] -> %b
// CHECK:        npu_dma.copy %flat[%c0, %c0] -> %y
