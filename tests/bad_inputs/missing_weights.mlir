// The module names a weight file that does not exist.
builtin.module attributes {npu.weights = "no_such.weights.npz"} {
  func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {weight = "w"} : tensor<2x8xf32>
    %0 = npu_graph.add %x, %w : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    func.return %0 : tensor<2x8xf32>
  }
}
