// npu-fuse's remarks, expected where their ONNX nodes' ops are (verify_diagnostics_passes.mlir).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> attributes {npu.inputs = ["x", "g", "b"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<32x16xf32>} : tensor<32x16xf32>
    // expected-remark @below {{applied: [fc, bias] matmul-epilogue}}
    %m = npu_graph.matmul %x, %w : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32> loc("fc")
    // expected-remark @+1 {{missed: [bias, ln] matmul-epilogue: layernorm not fused}}
    %a = npu_graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("bias")
    // expected-remark @+1 {{missed: [ln] matmul-prologue}}
    %n = npu_graph.layernorm %a, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("ln")
    func.return %n : tensor<4x16xf32>
  }
}
