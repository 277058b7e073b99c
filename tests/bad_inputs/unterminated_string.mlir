// A string literal left open on a long line (xDSL's lexer backtracked exponentially on it).
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = npu_graph.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("act: the closing quote of this location is missing, and the line goes on and on)
  func.return %0 : tensor<2x8xf32>
}
