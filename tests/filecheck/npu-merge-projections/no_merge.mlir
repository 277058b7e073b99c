// RUN: %opt %s --split-input-file -p npu-merge-projections | filecheck %s

// Not merged: a projection whose result something else reads too (here the function
// returns it), so its slice would be copied out of the merged result.
// CHECK-LABEL: func.func @read_elsewhere
// CHECK-COUNT-2: npu_graph.matmul %x, %{{.*}} : (tensor<8x16xf32>, tensor<16x16xf32>)
// CHECK-NOT:     npu_graph.slice
func.func @read_elsewhere(%x: tensor<8x16xf32>) -> (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<8x16xf32>) {
  %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
  %wk = npu_graph.constant {value = dense<0.03> : tensor<16x16xf32>} : tensor<16x16xf32>
  %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %k0 = npu_graph.matmul %x, %wk : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %k1 = npu_graph.reshape %k0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %k = npu_graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  func.return %q, %k, %k0 : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<8x16xf32>
}

// -----

// Not merged: the second projection is not split into heads (an MLP reads it).
// CHECK-LABEL: func.func @not_heads
// CHECK-COUNT-2: npu_graph.matmul %x, %{{.*}} : (tensor<8x16xf32>, tensor<16x16xf32>)
// CHECK-NOT:     npu_graph.slice
func.func @not_heads(%x: tensor<8x16xf32>) -> (tensor<1x2x8x8xf32>, tensor<1x8x16xf32>) {
  %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
  %wk = npu_graph.constant {value = dense<0.03> : tensor<16x16xf32>} : tensor<16x16xf32>
  %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %k0 = npu_graph.matmul %x, %wk : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %k1 = npu_graph.reshape %k0 : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
  func.return %q, %k1 : tensor<1x2x8x8xf32>, tensor<1x8x16xf32>
}

// -----

// Not merged: heads of different sizes (8 and 4: no one view holds both as heads),
// one projection only, weights that are an input, a bias on one projection only.
// CHECK-LABEL: func.func @head_sizes
// CHECK-NOT:     npu_graph.slice
// CHECK-LABEL: func.func @one
// CHECK-NOT:     npu_graph.slice
// CHECK-LABEL: func.func @input_weights
// CHECK-NOT:     npu_graph.slice
// CHECK-LABEL: func.func @one_bias
// CHECK-NOT:     npu_graph.slice
func.func @head_sizes(%x: tensor<8x16xf32>) -> (tensor<1x2x8x8xf32>, tensor<1x4x8x4xf32>) {
  %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
  %wk = npu_graph.constant {value = dense<0.03> : tensor<16x16xf32>} : tensor<16x16xf32>
  %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %k0 = npu_graph.matmul %x, %wk : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %k1 = npu_graph.reshape %k0 : (tensor<8x16xf32>) -> tensor<1x8x4x4xf32>
  %k = npu_graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x8x4xf32>
  func.return %q, %k : tensor<1x2x8x8xf32>, tensor<1x4x8x4xf32>
}

func.func @one(%x: tensor<8x16xf32>) -> tensor<1x2x8x8xf32> {
  %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
  %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  func.return %q : tensor<1x2x8x8xf32>
}

func.func @input_weights(%x: tensor<8x16xf32>, %wk: tensor<16x16xf32>) -> (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) {
  %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
  %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %k0 = npu_graph.matmul %x, %wk : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %k1 = npu_graph.reshape %k0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %k = npu_graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  func.return %q, %k : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
}

func.func @one_bias(%x: tensor<8x16xf32>) -> (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) {
  %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
  %bq = npu_graph.constant {value = dense<0.1> : tensor<16xf32>} : tensor<16xf32>
  %wk = npu_graph.constant {value = dense<0.03> : tensor<16x16xf32>} : tensor<16x16xf32>
  %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %qb = npu_graph.add %q0, %bq : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %q1 = npu_graph.reshape %qb : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %k0 = npu_graph.matmul %x, %wk : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %k1 = npu_graph.reshape %k0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
  %k = npu_graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  func.return %q, %k : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
}
