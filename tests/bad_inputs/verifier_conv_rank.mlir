// A convolution of a 3-D input (npu_graph.conv2d's verifier).
func.func @main(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = npu_graph.conv2d %x, %w : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %0 : tensor<1x4x6x6xf32>
}
