// 64 GiB in and 64 GiB out: more than the device DRAM (npu-memplan's diagnostic).
func.func @main(%x: tensor<131072x131072xf32>) -> tensor<131072x131072xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
  %0 = npu_graph.relu %x : (tensor<131072x131072xf32>) -> tensor<131072x131072xf32> loc("act")
  func.return %0 : tensor<131072x131072xf32>
}
