// A constant with neither a weight key nor a value.
func.func @main() -> tensor<4xf32> {
  %0 = npu_graph.constant : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
