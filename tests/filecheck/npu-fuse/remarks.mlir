// RUN: %opt %s -p npu-fuse --remarks -o /dev/null 2>&1 | filecheck %s
// RUN: %opt %s -p 'npu-fuse{disable=matmul-epilogue}' --remarks -o /dev/null 2>&1 | filecheck %s --check-prefix=OFF
// RUN: %opt %s -p npu-fuse -o /dev/null 2>&1 | filecheck %s --check-prefix=QUIET --allow-empty

// Optimisation remarks of npu-fuse: the epilogue it formed (applied), the LayerNorm
// after it that it did not take (missed, with the reason), a rule switched off.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> attributes {npu.inputs = ["x", "g", "b"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<32x16xf32>} : tensor<32x16xf32>
    %m = npu_graph.matmul %x, %w : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32> loc("fc")
    %a = npu_graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("bias")
    %n = npu_graph.layernorm %a, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("ln")
    func.return %n : tensor<4x16xf32>
  }
}
// CHECK-DAG: remark: npu-fuse: missed: [bias, ln] matmul-epilogue: layernorm not fused into the epilogue - npu-fuse has no row-reduction epilogue
// CHECK-DAG: remark: npu-fuse: applied: [fc, bias] matmul-epilogue: 2 ops (matmul, add) as one kernel

// OFF: remark: npu-fuse: missed: [] rule matmul-epilogue disabled (npu-fuse{disable=matmul-epilogue})
// OFF-NOT: applied: [fc, bias]

// QUIET-NOT: remark
