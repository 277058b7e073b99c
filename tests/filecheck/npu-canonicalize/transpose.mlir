// RUN: %opt %s --split-input-file -p npu-canonicalize | filecheck %s
// npu-canonicalize: transpose(transpose(x)) becomes one transpose or nothing, an
// identity transpose vanishes, and a transpose that only moves size-1 dims is a reshape.

// Two transposes that cancel: nothing is left.
// CHECK-LABEL: func.func @cancel
// CHECK-NEXT:    func.return %x
func.func @cancel(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = npu_graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %b = npu_graph.transpose %a {perm = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %b : tensor<2x3x4xf32>
}

// -----

// Two transposes compose into one: result dim i is x's dim p[q[i]].
// CHECK-LABEL: func.func @compose
// CHECK-NEXT:    %b = npu_graph.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT:    func.return %b
func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %a = npu_graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = npu_graph.transpose %a {perm = array<i64: 2, 0, 1>} : (tensor<3x2x4xf32>) -> tensor<4x3x2xf32>
  func.return %b : tensor<4x3x2xf32>
}

// -----

// The inner transpose has another user: it stays, the outer one reads %x directly.
// CHECK-LABEL: func.func @shared_inner
// CHECK-NEXT:    %a = npu_graph.transpose %x {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT:    %b = npu_graph.transpose %x {perm = array<i64: 2, 1, 0>}
// CHECK-NEXT:    func.return %a, %b
func.func @shared_inner(%x: tensor<2x3x4xf32>) -> (tensor<3x2x4xf32>, tensor<4x3x2xf32>) {
  %a = npu_graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = npu_graph.transpose %a {perm = array<i64: 2, 0, 1>} : (tensor<3x2x4xf32>) -> tensor<4x3x2xf32>
  func.return %a, %b : tensor<3x2x4xf32>, tensor<4x3x2xf32>
}

// -----

// The identity permutation.
// CHECK-LABEL: func.func @identity
// CHECK-NEXT:    func.return %x
func.func @identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = npu_graph.transpose %x {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a : tensor<2x3xf32>
}

// -----

// Only size-1 dims move (4 and 8 keep their order): the data layout is unchanged,
// so it is a reshape.
// CHECK-LABEL: func.func @unit_dims
// CHECK-NEXT:    %a = npu_graph.reshape %x : (tensor<1x4x1x8xf32>) -> tensor<4x1x1x8xf32>
// CHECK-NEXT:    func.return %a
func.func @unit_dims(%x: tensor<1x4x1x8xf32>) -> tensor<4x1x1x8xf32> {
  %a = npu_graph.transpose %x {perm = array<i64: 1, 0, 2, 3>} : (tensor<1x4x1x8xf32>) -> tensor<4x1x1x8xf32>
  func.return %a : tensor<4x1x1x8xf32>
}

// -----

// A unit-dim transpose between reshapes joins the reshape chain: one reshape remains.
// CHECK-LABEL: func.func @unit_dims_chain
// CHECK-NEXT:    %c = npu_graph.reshape %x : (tensor<4x8xf32>) -> tensor<32xf32>
// CHECK-NEXT:    func.return %c
func.func @unit_dims_chain(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %a = npu_graph.reshape %x : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
  %b = npu_graph.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<4x1x8xf32>) -> tensor<1x4x8xf32>
  %c = npu_graph.reshape %b : (tensor<1x4x8xf32>) -> tensor<32xf32>
  func.return %c : tensor<32xf32>
}

// -----

// Does not fire: a transpose that really moves data (8 and 4 swap), even with a
// size-1 dim among them. The second transpose reads a relu, not a transpose, and only
// moves the size-1 dim: a reshape.
// CHECK-LABEL: func.func @real_transpose
// CHECK-NEXT:    %a = npu_graph.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<4x1x8xf32>) -> tensor<8x1x4xf32>
// CHECK-NEXT:    %r = npu_graph.relu %a
// CHECK-NEXT:    %b = npu_graph.reshape %r : (tensor<8x1x4xf32>) -> tensor<1x8x4xf32>
// CHECK-NEXT:    func.return %b
func.func @real_transpose(%x: tensor<4x1x8xf32>) -> tensor<1x8x4xf32> {
  %a = npu_graph.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<4x1x8xf32>) -> tensor<8x1x4xf32>
  %r = npu_graph.relu %a : (tensor<8x1x4xf32>) -> tensor<8x1x4xf32>
  %b = npu_graph.transpose %r {perm = array<i64: 1, 0, 2>} : (tensor<8x1x4xf32>) -> tensor<1x8x4xf32>
  func.return %b : tensor<1x8x4xf32>
}
