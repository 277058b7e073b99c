// RUN: %roundtrip
// npu_dma.copy moves a `sizes` window between "dram" and "sram" and returns a
// !npu_dma.token; npu_dma.wait blocks until that copy has landed; npu_dma.done is a
// token already complete.

builtin.module {
  // CHECK-LABEL: func.func @copies
  func.func @copies(%x: memref<1x3x8x8xf32, "dram">, %y: memref<4x16xf32, "dram">,
                    %a: memref<1x3x10x10xf32, "sram">, %c: memref<4x16xf32, "sram">, %i: index) {
    %c0 = arith.constant 0 : index
    %m1 = arith.constant -1 : index

    // A load with a padded halo: elements outside %x read as pad_value.
    // CHECK: %t = npu_dma.copy %x[%c0, %c0, %m1, %m1] -> %a[%c0, %c0, %c0, %c0] {sizes = array<i64: 1, 3, 10, 10>, pad_value = 0xff800000 : f32} : memref<1x3x8x8xf32, "dram"> -> memref<1x3x10x10xf32, "sram">
    // CHECK: npu_dma.wait %t
    %t = npu_dma.copy %x[%c0, %c0, %m1, %m1] -> %a[%c0, %c0, %c0, %c0] {sizes = array<i64: 1, 3, 10, 10>, pad_value = 0xFF800000 : f32} : memref<1x3x8x8xf32, "dram"> -> memref<1x3x10x10xf32, "sram">
    npu_dma.wait %t

    // A token already complete (what a loop-carried token starts from): waiting on it
    // returns at once.
    // CHECK: %none = npu_dma.done
    // CHECK-NEXT: npu_dma.wait %none
    %none = npu_dma.done
    npu_dma.wait %none

    // A store of a partial tile: elements outside %y are dropped (clip).
    // CHECK: %t2 = npu_dma.copy %c[%c0, %c0] -> %y[%i, %c0] {sizes = array<i64: 4, 16>, clip} : memref<4x16xf32, "sram"> -> memref<4x16xf32, "dram">
    %t2 = npu_dma.copy %c[%c0, %c0] -> %y[%i, %c0] {sizes = array<i64: 4, 16>, clip} : memref<4x16xf32, "sram"> -> memref<4x16xf32, "dram">

    // Neither pad_value nor clip: the window must lie inside both buffers.
    // CHECK: %t3 = npu_dma.copy %y[%c0, %c0] -> %c[%c0, %c0] {sizes = array<i64: 2, 8>} : memref<4x16xf32, "dram"> -> memref<4x16xf32, "sram">
    %t3 = npu_dma.copy %y[%c0, %c0] -> %c[%c0, %c0] {sizes = array<i64: 2, 8>} : memref<4x16xf32, "dram"> -> memref<4x16xf32, "sram">

    // A source window that may leave the source without padding (src_clip): only the
    // rows inside %y land; the rest of %c keeps what another copy put there.
    // CHECK: %t4 = npu_dma.copy %y[%m1, %c0] -> %c[%c0, %c0] {sizes = array<i64: 4, 16>, src_clip} : memref<4x16xf32, "dram"> -> memref<4x16xf32, "sram">
    %t4 = npu_dma.copy %y[%m1, %c0] -> %c[%c0, %c0] {sizes = array<i64: 4, 16>, src_clip} : memref<4x16xf32, "dram"> -> memref<4x16xf32, "sram">

    // Tokens are ordinary values: they can be passed around and waited on later.
    // CHECK: func.call @drain(%t2, %t3) : (!npu_dma.token, !npu_dma.token) -> ()
    func.call @drain(%t2, %t3) : (!npu_dma.token, !npu_dma.token) -> ()
    func.return
  }

  // Typed buffers: a copy moves elements of one type (2 bytes for f16/bf16, 1 for
  // i8/ui8); an integer buffer pads with an integer (the zero point).
  // CHECK-LABEL: func.func @typed
  func.func @typed(%h: memref<4x16xf16, "dram">, %hs: memref<4x16xf16, "sram">,
                   %b: memref<4x16xbf16, "dram">, %bs: memref<4x16xbf16, "sram">,
                   %q: memref<1x3x8x8xi8, "dram">, %qs: memref<1x3x10x10xi8, "sram">,
                   %u: memref<16xui8, "dram">, %us: memref<16xui8, "sram">, %acc: memref<4x16xi32, "sram">,
                   %accd: memref<4x16xi32, "dram">) {
    %c0 = arith.constant 0 : index
    %m1 = arith.constant -1 : index
    // CHECK: %t = npu_dma.copy %h[%c0, %c0] -> %hs[%c0, %c0] {sizes = array<i64: 4, 16>} : memref<4x16xf16, "dram"> -> memref<4x16xf16, "sram">
    %t = npu_dma.copy %h[%c0, %c0] -> %hs[%c0, %c0] {sizes = array<i64: 4, 16>} : memref<4x16xf16, "dram"> -> memref<4x16xf16, "sram">
    // CHECK: %t2 = npu_dma.copy %b[%m1, %c0] -> %bs[%c0, %c0] {sizes = array<i64: 4, 16>, pad_value = 0xff800000 : f32} : memref<4x16xbf16, "dram"> -> memref<4x16xbf16, "sram">
    %t2 = npu_dma.copy %b[%m1, %c0] -> %bs[%c0, %c0] {sizes = array<i64: 4, 16>, pad_value = 0xFF800000 : f32} : memref<4x16xbf16, "dram"> -> memref<4x16xbf16, "sram">
    // CHECK: %t3 = npu_dma.copy %q[%c0, %c0, %m1, %m1] -> %qs[%c0, %c0, %c0, %c0] {sizes = array<i64: 1, 3, 10, 10>, pad_value = -1.280000e+02 : f32} : memref<1x3x8x8xi8, "dram"> -> memref<1x3x10x10xi8, "sram">
    %t3 = npu_dma.copy %q[%c0, %c0, %m1, %m1] -> %qs[%c0, %c0, %c0, %c0] {sizes = array<i64: 1, 3, 10, 10>, pad_value = -128.0 : f32} : memref<1x3x8x8xi8, "dram"> -> memref<1x3x10x10xi8, "sram">
    // CHECK: %t4 = npu_dma.copy %u[%c0] -> %us[%c0] {sizes = array<i64: 16>} : memref<16xui8, "dram"> -> memref<16xui8, "sram">
    %t4 = npu_dma.copy %u[%c0] -> %us[%c0] {sizes = array<i64: 16>} : memref<16xui8, "dram"> -> memref<16xui8, "sram">
    // CHECK: %t5 = npu_dma.copy %acc[%c0, %c0] -> %accd[%c0, %c0] {sizes = array<i64: 4, 16>} : memref<4x16xi32, "sram"> -> memref<4x16xi32, "dram">
    %t5 = npu_dma.copy %acc[%c0, %c0] -> %accd[%c0, %c0] {sizes = array<i64: 4, 16>} : memref<4x16xi32, "sram"> -> memref<4x16xi32, "dram">
    func.return
  }

  // CHECK-LABEL: func.func @drain(%a: !npu_dma.token, %b: !npu_dma.token)
  // CHECK:       npu_dma.wait %a
  // CHECK:       npu_dma.wait %b
  func.func @drain(%a: !npu_dma.token, %b: !npu_dma.token) {
    npu_dma.wait %a
    npu_dma.wait %b
    func.return
  }
}
