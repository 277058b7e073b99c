// RUN: %opt %s --split-input-file -p npu-fuse,npu-tile,npu-tile-loops,npu-bufferize | filecheck %s
// RUN: %opt %s --split-input-file -p npu-default -o %t.mlir && filecheck %s --check-prefix=ARCH < %t.mlir

// A product's bias add right after its last reduction step, in place on the
// accumulator with a bias varying along one axis at most (here per column), is marked
// `cube_output`: an arch with `bias_unit = cube` runs it in the cube's output stage.
// The mark is the IR's; the arch decides (`bias_unit = vector` keeps it on the vector
// unit: npu-unit-sync fences it after the matmul).
// CHECK-LABEL: func.func @bias
// CHECK:       npu_compute.matmul %{{.*}}, %{{.*}} -> %[[ACC:[^ ]*]]
// CHECK:       npu_compute.eltwise add %[[ACC]], %{{.*}} -> %[[ACC]] {cube_output} : memref<{{.*}}xf32, "sram">, memref<1x128xf32, "sram">
// ARCH-LABEL:  func.func @bias
// ARCH:        npu_compute.fence cube -> vector on %[[ACC:[^ ]*]]
// ARCH-NEXT:   npu_compute.eltwise add %[[ACC]], %{{.*}} -> %[[ACC]] {cube_output}
builtin.module attributes {npu.arch = #npu.arch<bias_unit = vector>} {
  func.func @bias(%x: tensor<256x64xf32>, %w: tensor<64x128xf32>, %b: tensor<128xf32>) -> tensor<256x128xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<256x64xf32>, tensor<64x128xf32>) -> tensor<256x128xf32> loc("mm")
    %z = npu_graph.add %y, %b : (tensor<256x128xf32>, tensor<128xf32>) -> tensor<256x128xf32> loc("bias")
    func.return %z : tensor<256x128xf32>
  }
}

// -----

// The bias first in the ONNX Add (bias + product): the accumulator becomes the first
// operand (a sum's operands commute exactly) and the add is marked the same. With
// `bias_unit = cube` no fence separates it from the matmul (both on the cube).
// CHECK-LABEL: func.func @bias_first
// CHECK:       npu_compute.matmul %{{.*}}, %{{.*}} -> %[[ACC:[^ ]*]]
// CHECK:       npu_compute.eltwise add %[[ACC]], %{{.*}} -> %[[ACC]] {cube_output}
// ARCH-LABEL:  func.func @bias_first
// ARCH:        npu_compute.matmul %{{.*}}, %{{.*}} -> %[[ACC:[^ ]*]]
// ARCH-NOT:    npu_compute.fence
// ARCH:        npu_compute.eltwise add %[[ACC]], %{{.*}} -> %[[ACC]] {cube_output}
builtin.module attributes {npu.arch = #npu.arch<bias_unit = cube>} {
  func.func @bias_first(%x: tensor<256x64xf32>, %w: tensor<64x128xf32>, %b: tensor<128xf32>) -> tensor<256x128xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<256x64xf32>, tensor<64x128xf32>) -> tensor<256x128xf32> loc("mm")
    %z = npu_graph.add %b, %y : (tensor<128xf32>, tensor<256x128xf32>) -> tensor<256x128xf32> loc("bias")
    func.return %z : tensor<256x128xf32>
  }
}

// -----

// Not a bias add for the output stage: a scale then a shift (the add follows the
// vector's multiply, not the product).
// CHECK-LABEL: func.func @not_after_product
// CHECK:       npu_compute.eltwise mul
// CHECK-NOT:   cube_output
// CHECK:       func.return
builtin.module {
  func.func @not_after_product(%x: tensor<256x64xf32>, %w: tensor<64x128xf32>, %s: tensor<128xf32>, %b: tensor<128xf32>) -> tensor<256x128xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<256x64xf32>, tensor<64x128xf32>) -> tensor<256x128xf32> loc("mm")
    %m = npu_graph.mul %y, %s : (tensor<256x128xf32>, tensor<128xf32>) -> tensor<256x128xf32> loc("scale")
    %z = npu_graph.add %m, %b : (tensor<256x128xf32>, tensor<128xf32>) -> tensor<256x128xf32> loc("shift")
    func.return %z : tensor<256x128xf32>
  }
}

// -----

// A conv's bias per channel is marked; an add varying along two axes (channels and
// rows) is not.
// CHECK-LABEL: func.func @conv_bias
// CHECK:       npu_compute.conv2d %{{.*}}, %{{.*}} -> %[[ACC:[^ ]*]]
// CHECK:       npu_compute.eltwise add %[[ACC]], %{{.*}} -> %[[ACC]] {cube_output} : memref<1x16x8x8xf32, "sram">, memref<1x16x1x1xf32, "sram">
// CHECK-LABEL: func.func @two_axes
// CHECK:       npu_compute.eltwise add
// CHECK-NOT:   cube_output
// CHECK:       func.return
builtin.module {
  func.func @conv_bias(%x: tensor<1x8x8x8xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32> {
    %y = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32> loc("conv")
    %z = npu_graph.add %y, %b : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32> loc("bias")
    func.return %z : tensor<1x16x8x8xf32>
  }
  func.func @two_axes(%x: tensor<1x8x8x8xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16x8x1xf32>) -> tensor<1x16x8x8xf32> {
    %y = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32> loc("conv")
    %z = npu_graph.add %y, %b : (tensor<1x16x8x8xf32>, tensor<16x8x1xf32>) -> tensor<1x16x8x8xf32> loc("bias")
    func.return %z : tensor<1x16x8x8xf32>
  }
}
