// The function returns a tensor<2x8xf32> but declares a tensor<4x4xf32> (func.return's verifier).
func.func @main(%x: tensor<2x8xf32>) -> tensor<4x4xf32> {
  %0 = npu_graph.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}
