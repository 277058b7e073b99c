// RUN: %opt %s --split-input-file -p npu-prefetch | filecheck %s
// npu-prefetch must not fire: a task without waits (its loads already start at once);
// a task with waits whose prologue loads no weight (only an activation); a task whose
// weight load comes after its first wait (it may reuse bytes the body read before);
// a task already marked.

builtin.module {
  func.func @main(%x: memref<16x128xf32, "dram">, %y: memref<16x128xf32, "dram">) {
    %w = npu_task.weight "w" {value = dense<0.5> : tensor<16x128xf32>, offset = 0 : i64} : memref<16x128xf32, "dram">
    %h = npu_task.alloc {offset = 0 : i64} : memref<16x128xf32, "dram">
    npu_task.task "nowait" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0, 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      %sw = npu_task.sram {offset = 8192 : i64} : memref<16x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tx
      npu_dma.wait %tw
      npu_compute.eltwise add %sx, %sw -> %sx : memref<16x128xf32, "sram">, memref<16x128xf32, "sram"> -> memref<16x128xf32, "sram">
      %th = npu_dma.copy %sx[%c0, %c0] -> %h[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "sram"> -> memref<16x128xf32, "dram">
      npu_dma.wait %th
    }
    npu_task.task "noweight" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sh = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %th = npu_dma.copy %h[%c0, %c0] -> %sh[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %th
    }
    npu_task.task "late" attributes {core = 2 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sh = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %th = npu_dma.copy %h[%c0, %c0] -> %sh[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %th
      %sw = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tw
    }
    func.return
  }
}
// CHECK:      npu_task.task "nowait" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0, 0>} {
// CHECK:        %tx = npu_dma.copy %x
// CHECK-NEXT:   %sw = npu_task.sram
// CHECK-NEXT:   %tw = npu_dma.copy %w
// CHECK:      npu_task.task "noweight" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>} {
// CHECK:      npu_task.task "late" attributes {core = 2 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>} {
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   arith.constant 0 : index
// CHECK-NEXT:   npu_task.sram
// CHECK-NEXT:   %[[TH:.*]] = npu_dma.copy %h
// CHECK-NEXT:   npu_dma.wait %[[TH]]
// CHECK-NEXT:   npu_task.sram
// CHECK-NEXT:   npu_dma.copy %w

// -----

builtin.module {
  func.func @main(%y: memref<16x128xf32, "dram">) {
    %w = npu_task.weight "w" {value = dense<0.5> : tensor<16x128xf32>, offset = 0 : i64} : memref<16x128xf32, "dram">
    npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
    }
    npu_task.task "marked" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>, prefetch = 1 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sw = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tw
      %ty = npu_dma.copy %sw[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "sram"> -> memref<16x128xf32, "dram">
      npu_dma.wait %ty
    }
    func.return
  }
}
// CHECK: npu_task.task "marked" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>, prefetch = 1 : i64} {
