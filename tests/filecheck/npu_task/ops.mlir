// RUN: %roundtrip
// Task-level IR: DRAM buffers (weight, alloc, view) and per-core tasks whose
// body takes the task's `range` [lo, hi) as two index arguments.

builtin.module {
  // CHECK-LABEL: func.func @main
  func.func @main(%x: memref<4x32xf32, "dram">, %y: memref<4x16xf32, "dram">) {
    // CHECK: %w = npu_task.weight "fc.w" {offset = 0 : i64} : memref<16x32xf32, "dram">
    // CHECK: %b = npu_task.weight "fc.b" {value = dense<1.000000e+00> : tensor<16xf32>, offset = 2048 : i64} : memref<16xf32, "dram">
    // CHECK: %u = npu_task.weight "late" : memref<16xf32, "dram">
    %w = npu_task.weight "fc.w" {offset = 0 : i64} : memref<16x32xf32, "dram">
    %b = npu_task.weight "fc.b" {value = dense<1.0> : tensor<16xf32>, offset = 2048 : i64} : memref<16xf32, "dram">
    %u = npu_task.weight "late" : memref<16xf32, "dram">

    // CHECK: %h = npu_task.alloc {offset = 0 : i64} : memref<4x16xf32, "dram">
    // CHECK: %h2 = npu_task.alloc : memref<64xf32, "dram">
    // CHECK: %v = npu_task.view %h : memref<4x16xf32, "dram"> to memref<64xf32, "dram">
    // CHECK: %s = npu_task.view %h {offset = 128 : i64} : memref<4x16xf32, "dram"> to memref<2x16xf32, "dram">
    %h = npu_task.alloc {offset = 0 : i64} : memref<4x16xf32, "dram">
    %h2 = npu_task.alloc : memref<64xf32, "dram">
    %v = npu_task.view %h : memref<4x16xf32, "dram"> to memref<64xf32, "dram">
    %s = npu_task.view %h {offset = 128 : i64} : memref<4x16xf32, "dram"> to memref<2x16xf32, "dram">

    // A task with every attribute.
    // CHECK:      npu_task.task "fc" attributes {core = 1 : i64, range = array<i64: 0, 4>, waits = array<i64: 2>, signals = array<i64: 0, 1>, predicted_cycles = 713 : i64} {
    // CHECK-NEXT: ^bb0(%lo: index, %hi: index):
    // CHECK:        %a = npu_task.sram {offset = 0 : i64} : memref<1x32xf32, "sram">
    // CHECK:        %c = npu_task.sram {offset = 2176 : i64, value = 2 : i64} : memref<1x16xf32, "sram">
    // CHECK:        %cv = npu_task.sram {offset = 2176 : i64, value = 2 : i64} : memref<16xf32, "sram">
    // CHECK:        %blk = npu_task.view %cv[%c1] : memref<16xf32, "sram"> to memref<4xf32, "sram">
    // CHECK:        scf.for %i = %lo to %hi step %c1 {
    // CHECK:          npu_dma.copy %x[%i, %c0] -> %a[%c0, %c0]
    // CHECK:          npu_compute.matmul %a, %bw -> %c {trans_b}
    // CHECK:          npu_dma.copy %c[%c0, %c0] -> %h[%i, %c0]
    npu_task.task "fc" attributes {core = 1 : i64, range = array<i64: 0, 4>, waits = array<i64: 2>, signals = array<i64: 0, 1>, predicted_cycles = 713 : i64} {
    ^bb0(%lo: index, %hi: index):
      %a = npu_task.sram {offset = 0 : i64} : memref<1x32xf32, "sram">
      %bw = npu_task.sram {offset = 128 : i64} : memref<16x32xf32, "sram">
      %c = npu_task.sram {offset = 2176 : i64, value = 2 : i64} : memref<1x16xf32, "sram">
      %cv = npu_task.sram {offset = 2176 : i64, value = 2 : i64} : memref<16xf32, "sram">
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %blk = npu_task.view %cv[%c1] : memref<16xf32, "sram"> to memref<4xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %bw[%c0, %c0] {sizes = array<i64: 16, 32>} : memref<16x32xf32, "dram"> -> memref<16x32xf32, "sram">
      npu_dma.wait %tw
      scf.for %i = %lo to %hi step %c1 {
        %t = npu_dma.copy %x[%i, %c0] -> %a[%c0, %c0] {sizes = array<i64: 1, 32>} : memref<4x32xf32, "dram"> -> memref<1x32xf32, "sram">
        npu_dma.wait %t
        npu_compute.matmul %a, %bw -> %c {trans_b} : memref<1x32xf32, "sram">, memref<16x32xf32, "sram"> -> memref<1x16xf32, "sram">
        %t2 = npu_dma.copy %c[%c0, %c0] -> %h[%i, %c0] {sizes = array<i64: 1, 16>} : memref<1x16xf32, "sram"> -> memref<4x16xf32, "dram">
        npu_dma.wait %t2
      }
    }

    // Typed buffers: offsets are multiples of the element's bytes (an i8 buffer may
    // start at any byte), views keep the element type.
    // CHECK: %q = npu_task.weight "q" {offset = 4097 : i64} : memref<16x32xi8, "dram">
    // CHECK: %hq = npu_task.alloc {offset = 4098 : i64} : memref<4x16xf16, "dram">
    // CHECK: %hv = npu_task.view %hq {offset = 32 : i64} : memref<4x16xf16, "dram"> to memref<16xf16, "dram">
    %q = npu_task.weight "q" {offset = 4097 : i64} : memref<16x32xi8, "dram">
    %hq = npu_task.alloc {offset = 4098 : i64} : memref<4x16xf16, "dram">
    %hv = npu_task.view %hq {offset = 32 : i64} : memref<4x16xf16, "dram"> to memref<16xf16, "dram">
    npu_task.task "typed" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      // CHECK: %s8 = npu_task.sram {offset = 3 : i64} : memref<16x32xi8, "sram">
      // CHECK: %s16 = npu_task.sram {offset = 514 : i64} : memref<4x16xbf16, "sram">
      // CHECK: %s32 = npu_task.sram {offset = 644 : i64} : memref<16xi32, "sram">
      %s8 = npu_task.sram {offset = 3 : i64} : memref<16x32xi8, "sram">
      %s16 = npu_task.sram {offset = 514 : i64} : memref<4x16xbf16, "sram">
      %s32 = npu_task.sram {offset = 644 : i64} : memref<16xi32, "sram">
    }

    // Only the required attributes, and an empty body.
    // CHECK:      npu_task.task "nop" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    // CHECK-NEXT: ^bb{{[0-9]+}}(%{{.*}}: index, %{{.*}}: index):
    // CHECK-NEXT: }
    npu_task.task "nop" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
    }
    func.return
  }
}
