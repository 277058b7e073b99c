// RUN: %opt %s -p npu-fold-attention-scale -o %t.mlir && filecheck %s < %t.mlir
// RUN: %opt %s -p npu-fold-attention-scale,npu-merge-projections,npu-fuse -o %t2.mlir && filecheck %s --check-prefix=FUSED < %t2.mlir
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM
// RUN: %opt %s -p npu-fold-attention-scale --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// BERT's attention scores q @ kt / sqrt(8): the division and its constant go, and the
// q projection reads its weights and bias times 1 / sqrt(8) (new constants); npu-fuse's attention
// then has scale 1, so its tiles do not scale q again at every key block.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %x2 = npu_graph.reshape %x : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
    %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
    %bq = npu_graph.constant {value = dense<0.1> : tensor<16xf32>} : tensor<16xf32>
    %wk = npu_graph.constant {value = dense<-0.03> : tensor<16x16xf32>} : tensor<16x16xf32>
    %bk = npu_graph.constant {value = dense<0.2> : tensor<16xf32>} : tensor<16xf32>
    %wv = npu_graph.constant {value = dense<0.07> : tensor<16x16xf32>} : tensor<16x16xf32>
    %q0 = npu_graph.matmul %x2, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32> loc("q")
    %q1 = npu_graph.add %q0, %bq : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32> loc("q_bias")
    %q2 = npu_graph.reshape %q1 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %q = npu_graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %k0 = npu_graph.matmul %x2, %wk : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32> loc("k")
    %k1 = npu_graph.add %k0, %bk : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32> loc("k_bias")
    %k2 = npu_graph.reshape %k1 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %kt = npu_graph.transpose %k2 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %v0 = npu_graph.matmul %x2, %wv : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32> loc("v")
    %v2 = npu_graph.reshape %v0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %v = npu_graph.transpose %v2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %c = npu_graph.constant {value = dense<2.828427> : tensor<f32>} : tensor<f32>
    %d = npu_graph.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32> loc("scale")
    %p = npu_graph.softmax %d {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %o = npu_graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> loc("attn")
    %o1 = npu_graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x8xf32>) -> tensor<1x8x2x8xf32>
    %y = npu_graph.reshape %o1 : (tensor<1x8x2x8xf32>) -> tensor<1x8x16xf32>
    func.return %y : tensor<1x8x16xf32>
  }
}
// CHECK-NOT:  dense<5.000000e-02>
// CHECK:      %[[W:.*]] = npu_graph.constant {weight = "q.scaled"} : tensor<16x16xf32>
// CHECK-NEXT: %[[Q0:.*]] = npu_graph.matmul %{{.*}}, %[[W]] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT: %[[B:.*]] = npu_graph.constant {value = dense<0.0353553407> : tensor<16xf32>} : tensor<16xf32>
// CHECK-NEXT: %{{.*}} = npu_graph.add %[[Q0]], %[[B]]
// CHECK:      %[[S:.*]] = npu_graph.matmul %q, %kt
// CHECK-NEXT: %{{.*}} = npu_graph.softmax %[[S]] {axis = -1 : i64}
// CHECK-NOT:  npu_graph.div

// FUSED: npu_graph.attention %{{.*}} {scale = 1.000000e+00 : f32, key_rows

// SIM: ok vs numpy float64 reference

// REMARK: remark: npu-fold-attention-scale: applied: [scale, q] the product's scale 0.353553 folded into the weights of its operand's projection
