// RUN: %opt %s -p npu-prefetch | filecheck %s
// RUN: npu-opt %s -p npu-unit-sync -o %t.before.mlir && npu-run %t.before.mlir --timing-only | filecheck %s --check-prefix=BEFORE
// RUN: npu-opt %s -p npu-prefetch,npu-unit-sync -o %t.mlir && npu-run %t.mlir --timing-only | filecheck %s --check-prefix=AFTER
// RUN: npu-opt %s -p 'npu-prefetch{reorder=false}' | filecheck %s --check-prefix=KEEP

// Core 0 computes h (a long gelu); core 1 waits for it, then loads h and its 48 KiB
// of weights. The pass puts the weight load first in core 1's prologue and marks it
// (with the constant and buffers before it) as run before the waits: the weights
// stream in while core 1 waits (2540 -> 2412 cycles, with the fences npu-unit-sync adds for the concurrent units). Core 0's task has no waits:
// it is left alone. With reorder=false only loads already leading the body are marked:
// h's load is first here, so nothing is.
builtin.module {
  func.func @main(%x: memref<64x128xf32, "dram">, %y: memref<16x96xf32, "dram">) attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_task.weight "w" {value = dense<0.5> : tensor<96x128xf32>, offset = 0 : i64} : memref<96x128xf32, "dram">
    %h = npu_task.alloc {offset = 0 : i64} : memref<16x128xf32, "dram">
    npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sw = npu_task.sram {offset = 0 : i64} : memref<96x128xf32, "sram">
      %sx = npu_task.sram {offset = 49152 : i64} : memref<64x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 64, 128>} : memref<64x128xf32, "dram"> -> memref<64x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 96, 128>} : memref<96x128xf32, "dram"> -> memref<96x128xf32, "sram">
      npu_dma.wait %tx
      npu_compute.eltwise gelu %sx -> %sx : memref<64x128xf32, "sram"> -> memref<64x128xf32, "sram">
      npu_compute.eltwise gelu %sx -> %sx : memref<64x128xf32, "sram"> -> memref<64x128xf32, "sram">
      npu_compute.eltwise gelu %sx -> %sx : memref<64x128xf32, "sram"> -> memref<64x128xf32, "sram">
      npu_compute.eltwise gelu %sx -> %sx : memref<64x128xf32, "sram"> -> memref<64x128xf32, "sram">
      %th = npu_dma.copy %sx[%c0, %c0] -> %h[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<64x128xf32, "sram"> -> memref<16x128xf32, "dram">
      npu_dma.wait %tw
      npu_dma.wait %th
    }
    npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sh = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %th = npu_dma.copy %h[%c0, %c0] -> %sh[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      %sw = npu_task.sram {offset = 8192 : i64} : memref<96x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 96, 128>} : memref<96x128xf32, "dram"> -> memref<96x128xf32, "sram">
      %sy = npu_task.sram {offset = 57344 : i64} : memref<16x96xf32, "sram">
      npu_dma.wait %th
      npu_dma.wait %tw
      npu_compute.matmul %sh, %sw -> %sy {trans_b} : memref<16x128xf32, "sram">, memref<96x128xf32, "sram"> -> memref<16x96xf32, "sram">
      %ty = npu_dma.copy %sy[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 16, 96>} : memref<16x96xf32, "sram"> -> memref<16x96xf32, "dram">
      npu_dma.wait %ty
    }
    func.return
  }
}
// CHECK:      npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>} {
// CHECK:      npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>, prefetch = 5 : i64} {
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT:   %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:   %sh = npu_task.sram {offset = 0 : i64}
// CHECK-NEXT:   %[[SW:.*]] = npu_task.sram {offset = 8192 : i64}
// CHECK-NEXT:   %sy = npu_task.sram {offset = 57344 : i64}
// CHECK-NEXT:   %[[TW:.*]] = npu_dma.copy %w[%[[C0]], %[[C0]]] -> %[[SW]]
// CHECK-NEXT:   %[[TH:.*]] = npu_dma.copy %h[%[[C0]], %[[C0]]] -> %sh
// CHECK-NEXT:   npu_dma.wait %[[TH]]
// CHECK-NEXT:   npu_dma.wait %[[TW]]

// KEEP:     npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>} {
// KEEP-NOT: prefetch

// BEFORE: cycles: 2540
// AFTER:  cycles: 2412
