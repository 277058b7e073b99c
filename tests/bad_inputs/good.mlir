// A well-formed graph-level module: the pass, option and arch cases run on it.
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
  %0 = npu_graph.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("act")
  func.return %0 : tensor<2x8xf32>
}
