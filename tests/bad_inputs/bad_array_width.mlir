// A dense array of 645-bit integers (xDSL raised NotImplementedError while parsing it).
func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %0 = npu_graph.maxpool %x {kernel = array<i645: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return %0 : tensor<1x4x4x4xf32>
}
