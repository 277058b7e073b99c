// RUN: %opt %s -p npu-fold-attention-scale | filecheck %s

// Where the pass must not fire: the scale stays a division or multiply of the scores.

// q's projection also feeds another reader (its output): scaling its weights would
// change that result.
builtin.module {
  func.func @shared(%x: tensor<8x16xf32>, %kt: tensor<1x2x8x8xf32>) -> (tensor<1x2x8x8xf32>, tensor<8x16xf32>) {
    %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
    %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %c = npu_graph.constant {value = dense<8.0> : tensor<f32>} : tensor<f32>
    %d = npu_graph.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    func.return %d, %q0 : tensor<1x2x8x8xf32>, tensor<8x16xf32>
  }
  // CHECK-LABEL: func.func @shared
  // CHECK: npu_graph.constant {value = dense<5.000000e-02> : tensor<16x16xf32>}
  // CHECK: npu_graph.div %s, %c

  // The weights are an input, not a constant.
  func.func @weights_input(%x: tensor<8x16xf32>, %wq: tensor<16x16xf32>, %kt: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
    %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %c = npu_graph.constant {value = dense<0.125> : tensor<f32>} : tensor<f32>
    %d = npu_graph.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    func.return %d : tensor<1x2x8x8xf32>
  }
  // CHECK-LABEL: func.func @weights_input
  // CHECK: npu_graph.mul %s, %c

  // The divisor is not a scalar (a per-key scale), and the scores are read twice.
  func.func @not_scalar(%x: tensor<8x16xf32>, %kt: tensor<1x2x8x8xf32>, %c: tensor<8xf32>) -> (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) {
    %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
    %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %d = npu_graph.div %s, %c : (tensor<1x2x8x8xf32>, tensor<8xf32>) -> tensor<1x2x8x8xf32>
    %two = npu_graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
    %e = npu_graph.mul %s, %two : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    func.return %d, %e : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
  }
  // CHECK-LABEL: func.func @not_scalar
  // CHECK: npu_graph.constant {value = dense<5.000000e-02> : tensor<16x16xf32>}
  // CHECK: npu_graph.div %s, %c
  // CHECK: npu_graph.mul %s, %two
  // q's columns (0 .. 16) of a split projection are also read by another slice (8 .. 24):
  // scaling them would change that reader.
  func.func @overlapping(%x: tensor<8x16xf32>, %kt: tensor<1x2x8x8xf32>) -> (tensor<1x2x8x8xf32>, tensor<8x16xf32>) {
    %w = npu_graph.constant {value = dense<0.05> : tensor<16x32xf32>} : tensor<16x32xf32>
    %p = npu_graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %qs = npu_graph.slice %p {starts = array<i64: 0, 0>, ends = array<i64: 8, 16>, steps = array<i64: 1, 1>} : (tensor<8x32xf32>) -> tensor<8x16xf32>
    %os = npu_graph.slice %p {starts = array<i64: 0, 8>, ends = array<i64: 8, 24>, steps = array<i64: 1, 1>} : (tensor<8x32xf32>) -> tensor<8x16xf32>
    %q1 = npu_graph.reshape %qs : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %c = npu_graph.constant {value = dense<8.0> : tensor<f32>} : tensor<f32>
    %d = npu_graph.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    func.return %d, %os : tensor<1x2x8x8xf32>, tensor<8x16xf32>
  }
  // CHECK-LABEL: func.func @overlapping
  // CHECK: npu_graph.constant {value = dense<5.000000e-02> : tensor<16x32xf32>}
  // CHECK: npu_graph.div %s, %c
}
