// %y is used but never defined.
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = npu_graph.relu %y : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}
