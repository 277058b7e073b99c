// A dense literal of 2 elements for a tensor of 4.
func.func @main() -> tensor<4xf32> {
  %0 = npu_graph.constant {value = dense<[1.0, 2.0]> : tensor<4xf32>} : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
