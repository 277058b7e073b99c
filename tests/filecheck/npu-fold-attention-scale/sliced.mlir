// RUN: %opt %s -p npu-fold-attention-scale -o %t.mlir && filecheck %s < %t.mlir
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// GPT-2's c_attn: one projection [16 -> 48] split into q, k and v by column slices.
// The scores' scale folds into q's columns only (0 .. 16 of the weights and bias):
// k and v read the other columns, unscaled.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: tensor<8x16xf32>) -> tensor<1x2x8x8xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.05> : tensor<16x48xf32>} : tensor<16x48xf32>
    %b = npu_graph.constant {value = dense<0.1> : tensor<48xf32>} : tensor<48xf32>
    %p0 = npu_graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x48xf32>) -> tensor<8x48xf32> loc("c_attn")
    %p1 = npu_graph.add %p0, %b : (tensor<8x48xf32>, tensor<48xf32>) -> tensor<8x48xf32> loc("c_attn_bias")
    %p = npu_graph.reshape %p1 : (tensor<8x48xf32>) -> tensor<1x8x48xf32>
    %qs = npu_graph.slice %p {starts = array<i64: 0, 0, 0>, ends = array<i64: 1, 8, 16>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x48xf32>) -> tensor<1x8x16xf32>
    %ks = npu_graph.slice %p {starts = array<i64: 0, 0, 16>, ends = array<i64: 1, 8, 32>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x48xf32>) -> tensor<1x8x16xf32>
    %vs = npu_graph.slice %p {starts = array<i64: 0, 0, 32>, ends = array<i64: 1, 8, 48>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x48xf32>) -> tensor<1x8x16xf32>
    %q1 = npu_graph.reshape %qs : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
    %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %k1 = npu_graph.reshape %ks : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
    %kt = npu_graph.transpose %k1 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %v1 = npu_graph.reshape %vs : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
    %v = npu_graph.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %c = npu_graph.constant {value = dense<8.0> : tensor<f32>} : tensor<f32>
    %d = npu_graph.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32> loc("scale")
    %pr = npu_graph.softmax %d {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %o = npu_graph.matmul %pr, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> loc("attn")
    func.return %o : tensor<1x2x8x8xf32>
  }
}
// CHECK-NOT:  dense<5.000000e-02>
// CHECK:      %[[W:.*]] = npu_graph.constant {weight = "c_attn.scaled"} : tensor<16x48xf32>
// CHECK-NEXT: %[[P0:.*]] = npu_graph.matmul %x, %[[W]]
// CHECK-NEXT: %[[B:.*]] = npu_graph.constant {weight = "c_attn_bias.scaled"} : tensor<48xf32>
// CHECK-NEXT: %{{.*}} = npu_graph.add %[[P0]], %[[B]]
// CHECK:      %[[S:.*]] = npu_graph.matmul %q, %kt
// CHECK-NEXT: %{{.*}} = npu_graph.softmax %[[S]] {axis = -1 : i64}

// SIM: ok vs numpy float64 reference
