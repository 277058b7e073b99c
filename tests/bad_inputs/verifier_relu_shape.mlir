// An elementwise op whose result type does not match its operand (npu_graph's verifier).
func.func @main(%x: tensor<2x8xf32>) -> tensor<4x4xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
  %0 = npu_graph.relu %x : (tensor<2x8xf32>) -> tensor<4x4xf32> loc("act")
  func.return %0 : tensor<4x4xf32>
}
