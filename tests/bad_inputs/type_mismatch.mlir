// %x is a tensor<2x8xf32> but is used as a tensor<4x4xf32>.
func.func @main(%x: tensor<2x8xf32>) -> tensor<4x4xf32> {
  %0 = npu_graph.relu %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %0 : tensor<4x4xf32>
}
