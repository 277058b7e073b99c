// RUN: %opt %s --split-input-file -p npu-cse | filecheck %s
// RUN: npu-opt %s --print-debuginfo --split-input-file -p npu-cse | filecheck %s --check-prefix=LOC
// npu-cse merges identical effect-free ops (same op, operands, attributes, result
// types); the survivor's location names both ONNX nodes.

// Constants naming the same weight or holding the same value merge, and then the
// ops on them.
// CHECK-LABEL: func.func @constants
// CHECK-NEXT:    %w1 = npu_graph.constant {weight = "w"}
// CHECK-NEXT:    %c1 = npu_graph.constant {value = dense<2.000000e+00> : tensor<1xf32>}
// CHECK-NEXT:    %a = npu_graph.matmul %x, %w1
// CHECK-NEXT:    %s = npu_graph.mul %a, %c1
// CHECK-NEXT:    %t = npu_graph.add %s, %s
// CHECK-NEXT:    func.return %t
// LOC-LABEL:   func.func @constants
// LOC:           %a = npu_graph.matmul {{.*}} loc(fused["/a/MatMul", "/b/MatMul"])
func.func @constants(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w1 = npu_graph.constant {weight = "w"} : tensor<8x4xf32>
  %w2 = npu_graph.constant {weight = "w"} : tensor<8x4xf32>
  %c1 = npu_graph.constant {value = dense<2.0> : tensor<1xf32>} : tensor<1xf32>
  %c2 = npu_graph.constant {value = dense<2.0> : tensor<1xf32>} : tensor<1xf32>
  %a = npu_graph.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32> loc("/a/MatMul")
  %b = npu_graph.matmul %x, %w2 : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32> loc("/b/MatMul")
  %s = npu_graph.mul %a, %c1 : (tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32>
  %u = npu_graph.mul %b, %c2 : (tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32>
  %t = npu_graph.add %s, %u : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %t : tensor<2x4xf32>
}

// -----

// Identical fused kernels on the same operand merge.
// CHECK-LABEL: func.func @kernels
// CHECK-NEXT:    %k1 = npu_graph.fused(%x)
// CHECK:         func.return %k1, %k1
func.func @kernels(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %k1 = npu_graph.fused(%x) {kernel = "k", rule = "eltwise-chain"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%p: tensor<4xf32>):
    %r = npu_graph.relu %p : (tensor<4xf32>) -> tensor<4xf32>
    npu_graph.yield %r : tensor<4xf32>
  }
  %k2 = npu_graph.fused(%x) {kernel = "k", rule = "eltwise-chain"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%q: tensor<4xf32>):
    %s = npu_graph.relu %q : (tensor<4xf32>) -> tensor<4xf32>
    npu_graph.yield %s : tensor<4xf32>
  }
  func.return %k1, %k2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Does not fire: different weights, different values, different attributes, or
// swapped operands (no commutativity is assumed).
// CHECK-LABEL: func.func @different
// CHECK-NEXT:    %w1 = npu_graph.constant {weight = "w1"}
// CHECK-NEXT:    %w2 = npu_graph.constant {weight = "w2"}
// CHECK-NEXT:    %c1 = npu_graph.constant {value = dense<1.000000e+00> : tensor<1xf32>}
// CHECK-NEXT:    %c2 = npu_graph.constant {value = dense<2.000000e+00> : tensor<1xf32>}
// CHECK-NEXT:    %a = npu_graph.transpose %w1 {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %b = npu_graph.transpose %w2 {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %s = npu_graph.softmax %a {axis = 0 : i64}
// CHECK-NEXT:    %t = npu_graph.softmax %a {axis = 1 : i64}
// CHECK-NEXT:    %u = npu_graph.sub %s, %t
// CHECK-NEXT:    %v = npu_graph.sub %t, %s
func.func @different() -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xf32>, tensor<1xf32>) {
  %w1 = npu_graph.constant {weight = "w1"} : tensor<8x4xf32>
  %w2 = npu_graph.constant {weight = "w2"} : tensor<8x4xf32>
  %c1 = npu_graph.constant {value = dense<1.0> : tensor<1xf32>} : tensor<1xf32>
  %c2 = npu_graph.constant {value = dense<2.0> : tensor<1xf32>} : tensor<1xf32>
  %a = npu_graph.transpose %w1 {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %b = npu_graph.transpose %w2 {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %s = npu_graph.softmax %a {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = npu_graph.softmax %a {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = npu_graph.sub %s, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = npu_graph.sub %t, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %b, %u, %v, %c1, %c2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xf32>, tensor<1xf32>
}

// -----

// Does not fire: ops with unknown effects (a call) are never merged.
builtin.module {
  func.func private @ext(tensor<4xf32>) -> tensor<4xf32>
  func.func @calls(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %a = func.call @ext(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = func.call @ext(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %a, %b : tensor<4xf32>, tensor<4xf32>
  }
}
// CHECK-LABEL: func.func @calls
// CHECK-NEXT:    %a = func.call @ext(%x)
// CHECK-NEXT:    %b = func.call @ext(%x)
// CHECK-NEXT:    func.return %a, %b
