// The function's region is never closed.
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = npu_graph.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
