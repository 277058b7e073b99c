// RUN: not npu-opt %s -p npu-fold-attention-scale 2>&1 | filecheck %s
// RUN: not npu-opt %s -p 'npu-fold-attention-scale{factor=2}' 2>&1 | filecheck %s --check-prefix=OPTION

// The projection's weights are in a weight file that is not there: the pass reading
// them (to scale them) says which file and fails, naming itself.
builtin.module attributes {npu.weights = "no-such-weights.npz"} {
  func.func @main(%x: tensor<8x16xf32>, %kt: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
    %wq = npu_graph.constant {weight = "q.w"} : tensor<16x16xf32>
    %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %c = npu_graph.constant {value = dense<8.0> : tensor<f32>} : tensor<f32>
    %d = npu_graph.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    func.return %d : tensor<1x2x8x8xf32>
  }
}
// CHECK: error: npu-fold-attention-scale: cannot read weight file '{{.*}}no-such-weights.npz' (module attribute npu.weights)
// OPTION: error: pass 'npu-fold-attention-scale' has no option 'factor'
