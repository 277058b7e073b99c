// RUN: %opt %s -p npu-canonicalize,npu-constant-fold | filecheck %s
// A decomposed conv_transpose with a constant weight: npu-constant-fold folds the
// weight rearrangement (reshape, pad, gather, transpose) into one constant, the
// phases' sub-kernels: output channel (c, rh, rw) takes tap (rh, rw) of every input.
// CHECK-LABEL: func.func @up
// CHECK-NEXT:    %[[W:.*]] = npu_graph.constant {value = dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}5.000000e+00]]], {{\[\[\[}}2.000000e+00]], {{\[\[}}6.000000e+00]]], {{\[\[\[}}3.000000e+00]], {{\[\[}}7.000000e+00]]], {{\[\[\[}}4.000000e+00]], {{\[\[}}8.000000e+00]]]]> : tensor<4x2x1x1xf32>}
// CHECK-NEXT:    %[[C:.*]] = npu_graph.conv2d %x, %[[W]] {{.*}} -> tensor<1x4x3x3xf32>
// CHECK-NEXT:    npu_graph.reshape %[[C]]
// CHECK-NEXT:    npu_graph.transpose
// CHECK-NEXT:    npu_graph.reshape
// CHECK-NEXT:    func.return
// CHECK-NOT:     npu_graph.gather
func.func @up(%x: tensor<1x2x3x3xf32>) -> tensor<1x1x6x6xf32> {
  %w = npu_graph.constant {value = dense<[[[[1.0, 2.0], [3.0, 4.0]]], [[[5.0, 6.0], [7.0, 8.0]]]]> : tensor<2x1x2x2xf32>} : tensor<2x1x2x2xf32>
  %y = npu_graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x1x2x2xf32>) -> tensor<1x1x6x6xf32>
  func.return %y : tensor<1x1x6x6xf32>
}
