// RUN: %roundtrip
// npu_compute ops work in place on "sram" tiles; the last operand is written.

builtin.module {
  // CHECK-LABEL: func.func @cube
  func.func @cube(%a: memref<4x32xf32, "sram">, %at: memref<32x4xf32, "sram">, %b: memref<32x16xf32, "sram">,
                  %bt: memref<16x32xf32, "sram">, %c: memref<4x16xf32, "sram">,
                  %x: memref<1x4x10x10xf32, "sram">, %w: memref<4x2x3x3xf32, "sram">, %o: memref<1x4x3x3xf32, "sram">,
                  %o2: memref<1x4x2x4xf32, "sram">) {
    // CHECK: npu_compute.matmul %a, %b -> %c : memref<4x32xf32, "sram">, memref<32x16xf32, "sram"> -> memref<4x16xf32, "sram">
    // CHECK: npu_compute.matmul %at, %bt -> %c {trans_a, trans_b, accumulate} : memref<32x4xf32, "sram">, memref<16x32xf32, "sram"> -> memref<4x16xf32, "sram">
    npu_compute.matmul %a, %b -> %c : memref<4x32xf32, "sram">, memref<32x16xf32, "sram"> -> memref<4x16xf32, "sram">
    npu_compute.matmul %at, %bt -> %c {trans_a, trans_b, accumulate} : memref<32x4xf32, "sram">, memref<16x32xf32, "sram"> -> memref<4x16xf32, "sram">

    // A grouped, strided, dilated convolution accumulating into %o (VALID: the input tile is already padded).
    // CHECK: npu_compute.conv2d %x, %w -> %o {strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, accumulate, group = 2 : i64} : memref<1x4x10x10xf32, "sram">, memref<4x2x3x3xf32, "sram"> -> memref<1x4x3x3xf32, "sram">
    npu_compute.conv2d %x, %w -> %o {strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>, group = 2 : i64, accumulate} : memref<1x4x10x10xf32, "sram">, memref<4x2x3x3xf32, "sram"> -> memref<1x4x3x3xf32, "sram">

    // Negative pads crop: rows 2..7 of %x (a strip group's branch reading the middle of a shared strip).
    // CHECK: npu_compute.conv2d %x, %w -> %o2 {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: -2, 0, -2, 0>, group = 2 : i64} : memref<1x4x10x10xf32, "sram">, memref<4x2x3x3xf32, "sram"> -> memref<1x4x2x4xf32, "sram">
    npu_compute.conv2d %x, %w -> %o2 {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: -2, 0, -2, 0>, group = 2 : i64} : memref<1x4x10x10xf32, "sram">, memref<4x2x3x3xf32, "sram"> -> memref<1x4x2x4xf32, "sram">
    func.return
  }

  // CHECK-LABEL: func.func @vector
  func.func @vector(%c: memref<4x16xf32, "sram">, %bias: memref<16xf32, "sram">,
                    %x: memref<1x1x8x8xf32, "sram">, %p: memref<1x1x4x4xf32, "sram">, %q: memref<1x1x3x3xf32, "sram">) {
    // CHECK: npu_compute.eltwise add %c, %bias -> %c : memref<4x16xf32, "sram">, memref<16xf32, "sram"> -> memref<4x16xf32, "sram">
    // CHECK: npu_compute.eltwise relu %c -> %c : memref<4x16xf32, "sram"> -> memref<4x16xf32, "sram">
    npu_compute.eltwise add %c, %bias -> %c : memref<4x16xf32, "sram">, memref<16xf32, "sram"> -> memref<4x16xf32, "sram">
    npu_compute.eltwise relu %c -> %c : memref<4x16xf32, "sram"> -> memref<4x16xf32, "sram">

    // CHECK: npu_compute.pool max %x -> %p {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : memref<1x1x8x8xf32, "sram"> -> memref<1x1x4x4xf32, "sram">
    // CHECK: npu_compute.pool max %x -> %q {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : memref<1x1x8x8xf32, "sram"> -> memref<1x1x3x3xf32, "sram">
    npu_compute.pool max %x -> %p {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : memref<1x1x8x8xf32, "sram"> -> memref<1x1x4x4xf32, "sram">
    npu_compute.pool max %x -> %q {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : memref<1x1x8x8xf32, "sram"> -> memref<1x1x3x3xf32, "sram">

    // CHECK: npu_compute.fill %c {value = 0.000000e+00 : f32} : memref<4x16xf32, "sram">
    npu_compute.fill %c {value = 0.0 : f32} : memref<4x16xf32, "sram">
    func.return
  }

  // Typed buffers: f16/bf16 cube operands into their type or an f32 accumulator; 8-bit
  // integers (with zero points) into i32; max pooling and fills of any type.
  // CHECK-LABEL: func.func @typed
  func.func @typed(%a: memref<4x32xf16, "sram">, %b: memref<32x16xf16, "sram">, %c: memref<4x16xf32, "sram">,
                   %ch: memref<4x16xf16, "sram">, %bfa: memref<4x32xbf16, "sram">, %bfb: memref<32x16xbf16, "sram">,
                   %bfc: memref<4x16xbf16, "sram">, %qa: memref<4x32xi8, "sram">, %qb: memref<32x16xui8, "sram">,
                   %acc: memref<4x16xi32, "sram">, %x: memref<1x4x10x10xi8, "sram">, %w: memref<4x2x3x3xi8, "sram">,
                   %o: memref<1x4x8x8xi32, "sram">, %p: memref<1x4x5x5xi8, "sram">) {
    // CHECK: npu_compute.matmul %a, %b -> %c {accumulate} : memref<4x32xf16, "sram">, memref<32x16xf16, "sram"> -> memref<4x16xf32, "sram">
    npu_compute.matmul %a, %b -> %c {accumulate} : memref<4x32xf16, "sram">, memref<32x16xf16, "sram"> -> memref<4x16xf32, "sram">
    // CHECK: npu_compute.matmul %a, %b -> %ch : memref<4x32xf16, "sram">, memref<32x16xf16, "sram"> -> memref<4x16xf16, "sram">
    npu_compute.matmul %a, %b -> %ch : memref<4x32xf16, "sram">, memref<32x16xf16, "sram"> -> memref<4x16xf16, "sram">
    // CHECK: npu_compute.matmul %bfa, %bfb -> %bfc : memref<4x32xbf16, "sram">, memref<32x16xbf16, "sram"> -> memref<4x16xbf16, "sram">
    npu_compute.matmul %bfa, %bfb -> %bfc : memref<4x32xbf16, "sram">, memref<32x16xbf16, "sram"> -> memref<4x16xbf16, "sram">
    // CHECK: npu_compute.matmul %qa, %qb -> %acc {input_zero_point = -3 : i64, weight_zero_point = 128 : i64} : memref<4x32xi8, "sram">, memref<32x16xui8, "sram"> -> memref<4x16xi32, "sram">
    npu_compute.matmul %qa, %qb -> %acc {input_zero_point = -3 : i64, weight_zero_point = 128 : i64} : memref<4x32xi8, "sram">, memref<32x16xui8, "sram"> -> memref<4x16xi32, "sram">
    // CHECK: npu_compute.conv2d %x, %w -> %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, input_zero_point = 5 : i64, group = 2 : i64} : memref<1x4x10x10xi8, "sram">, memref<4x2x3x3xi8, "sram"> -> memref<1x4x8x8xi32, "sram">
    npu_compute.conv2d %x, %w -> %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64, input_zero_point = 5 : i64} : memref<1x4x10x10xi8, "sram">, memref<4x2x3x3xi8, "sram"> -> memref<1x4x8x8xi32, "sram">
    // CHECK: npu_compute.pool max %x -> %p {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : memref<1x4x10x10xi8, "sram"> -> memref<1x4x5x5xi8, "sram">
    npu_compute.pool max %x -> %p {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : memref<1x4x10x10xi8, "sram"> -> memref<1x4x5x5xi8, "sram">
    // CHECK: npu_compute.eltwise add %ch, %ch -> %ch : memref<4x16xf16, "sram">, memref<4x16xf16, "sram"> -> memref<4x16xf16, "sram">
    npu_compute.eltwise add %ch, %ch -> %ch : memref<4x16xf16, "sram">, memref<4x16xf16, "sram"> -> memref<4x16xf16, "sram">
    // CHECK: npu_compute.eltwise max %p, %p -> %p : memref<1x4x5x5xi8, "sram">, memref<1x4x5x5xi8, "sram"> -> memref<1x4x5x5xi8, "sram">
    npu_compute.eltwise max %p, %p -> %p : memref<1x4x5x5xi8, "sram">, memref<1x4x5x5xi8, "sram"> -> memref<1x4x5x5xi8, "sram">
    // CHECK: npu_compute.fill %acc {value = -7.000000e+00 : f32} : memref<4x16xi32, "sram">
    npu_compute.fill %acc {value = -7.0 : f32} : memref<4x16xi32, "sram">
    // CHECK: npu_compute.apply "npu_graph.softmax" %ch -> %ch {attrs = {axis = -1 : i64}} : memref<4x16xf16, "sram"> -> memref<4x16xf16, "sram">
    npu_compute.apply "npu_graph.softmax" %ch -> %ch {attrs = {axis = -1 : i64}} : memref<4x16xf16, "sram"> -> memref<4x16xf16, "sram">
    func.return
  }
  // A fence between units, on the buffers whose bytes it orders.
  // CHECK-LABEL: func.func @fences
  // CHECK: npu_compute.fence cube -> vector on %a : memref<4x32xf32, "sram">
  // CHECK: npu_compute.fence vector -> dma on %a, %c : memref<4x32xf32, "sram">, memref<4x16xf32, "sram">
  func.func @fences(%a: memref<4x32xf32, "sram">, %c: memref<4x16xf32, "sram">) {
    npu_compute.fence cube -> vector on %a : memref<4x32xf32, "sram">
    npu_compute.fence vector -> dma on %a, %c : memref<4x32xf32, "sram">, memref<4x16xf32, "sram">
    func.return
  }
}
