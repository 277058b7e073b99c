// RUN: %opt %s --split-input-file -p npu-constant-fold -o %t.mlir && filecheck %s < %t.mlir
// RUN: npu-opt %s --print-debuginfo --split-input-file -p npu-constant-fold -o %t.loc.mlir && filecheck %s --check-prefix=LOC < %t.loc.mlir
// npu-constant-fold evaluates ops whose operands are all constants: small results
// become inline values, larger ones new weights (saved beside the output); the folded
// op's location (ONNX node) is kept.

// A chain of ops on inline constants folds into one inline constant.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %c = npu_graph.constant {value = dense<[5.000000e+00, 7.000000e+00, 9.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT:    %y = npu_graph.add %x, %c
// CHECK-NEXT:    func.return %y
// LOC-LABEL:   func.func @chain
// LOC-NEXT:      npu_graph.constant {{.*}} loc("/scale/Mul")
func.func @chain(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = npu_graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32> loc("a")
  %b = npu_graph.constant {value = dense<[1.5, 1.5, 1.5]> : tensor<3xf32>} : tensor<3xf32> loc("b")
  %two = npu_graph.constant {value = dense<2.0> : tensor<1xf32>} : tensor<1xf32> loc("two")
  %s = npu_graph.add %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("/bias/Add")
  %c = npu_graph.mul %s, %two : (tensor<3xf32>, tensor<1xf32>) -> tensor<3xf32> loc("/scale/Mul")
  %y = npu_graph.add %x, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("/out/Add")
  func.return %y : tensor<2x3xf32>
}

// -----

// A transposed weight (a PyTorch Linear exported with MatMul) becomes a new weight,
// keyed after the node; the module now names the saved weight file.
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @weight(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<4x8xf32>
    %t = npu_graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32> loc("/fc/Transpose")
    %y = npu_graph.matmul %x, %t : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32> loc("/fc/MatMul")
    func.return %y : tensor<2x4xf32>
  }
}
// CHECK:       builtin.module attributes {npu.weights = "{{.*}}.weights.npz"}
// CHECK-LABEL: func.func @weight
// CHECK-NEXT:    %t = npu_graph.constant {weight = "fc_Transpose.folded"} : tensor<8x4xf32>
// CHECK-NEXT:    %y = npu_graph.matmul %x, %t
// CHECK-NOT:     npu_graph.transpose
// LOC-LABEL:   func.func @weight
// LOC-NEXT:      npu_graph.constant {weight = "fc_Transpose.folded"} : tensor<8x4xf32> loc("/fc/Transpose")

// -----

// A weight and an inline constant together; a small result of a weight is inline.
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @mixed() -> tensor<2xf32> {
    %b = npu_graph.constant {weight = "b"} : tensor<8xf32>
    %k = npu_graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>} : tensor<8xf32>
    %m = npu_graph.mul %b, %k : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %r = npu_graph.reshape %m : (tensor<8xf32>) -> tensor<2x4xf32>
    %one = npu_graph.constant {value = dense<1.0> : tensor<4x1xf32>} : tensor<4x1xf32>
    %s = npu_graph.matmul %r, %one : (tensor<2x4xf32>, tensor<4x1xf32>) -> tensor<2x1xf32>
    %f = npu_graph.reshape %s : (tensor<2x1xf32>) -> tensor<2xf32>
    func.return %f : tensor<2xf32>
  }
}
// CHECK-LABEL: func.func @mixed
// CHECK-NEXT:    %f = npu_graph.constant {value = dense<[5.000000e+00, 1.300000e+01]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT:    func.return %f

// -----

// inf cannot be written inline (xDSL would read it back as an integer), so even a
// tiny result holding inf goes to the weight file.
// CHECK-LABEL: func.func @non_finite
// CHECK-NEXT:    %q = npu_graph.constant {weight = "div.folded"} : tensor<2xf32>
func.func @non_finite() -> tensor<2xf32> {
  %n = npu_graph.constant {value = dense<1.0> : tensor<1xf32>} : tensor<1xf32>
  %d = npu_graph.constant {value = dense<[2.0, 0.0]> : tensor<2xf32>} : tensor<2xf32>
  %q = npu_graph.div %n, %d : (tensor<1xf32>, tensor<2xf32>) -> tensor<2xf32> loc("/div")
  func.return %q : tensor<2xf32>
}

// -----

// A fused kernel whose inputs are all constants folds as a whole.
// CHECK-LABEL: func.func @fused_kernel
// CHECK-NEXT:    %k = npu_graph.constant {value = dense<[0.000000e+00, 3.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT:    func.return %k
func.func @fused_kernel() -> tensor<2xf32> {
  %a = npu_graph.constant {value = dense<[-3.0, 1.0]> : tensor<2xf32>} : tensor<2xf32>
  %b = npu_graph.constant {value = dense<2.0> : tensor<1xf32>} : tensor<1xf32>
  %k = npu_graph.fused(%a, %b) {kernel = "k", rule = "eltwise-chain"} : (tensor<2xf32>, tensor<1xf32>) -> tensor<2xf32> {
  ^bb0(%p: tensor<2xf32>, %q: tensor<1xf32>):
    %s = npu_graph.add %p, %q : (tensor<2xf32>, tensor<1xf32>) -> tensor<2xf32>
    %r = npu_graph.relu %s : (tensor<2xf32>) -> tensor<2xf32>
    npu_graph.yield %r : tensor<2xf32>
  }
  func.return %k : tensor<2xf32>
}

// -----

// Does not fire: an operand is not a constant.
// CHECK-LABEL: func.func @not_constant
// CHECK-NEXT:    %c = npu_graph.constant
// CHECK-NEXT:    %y = npu_graph.add %x, %c
// CHECK-NEXT:    %r = npu_graph.relu %y
func.func @not_constant(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = npu_graph.constant {value = dense<1.0> : tensor<3xf32>} : tensor<3xf32>
  %y = npu_graph.add %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %r = npu_graph.relu %y : (tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// Does not fire: the weight is not in the weight file (nothing to evaluate with).
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @unknown_weight() -> tensor<8x4xf32> {
    %w = npu_graph.constant {weight = "nope"} : tensor<4x8xf32>
    %t = npu_graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
    func.return %t : tensor<8x4xf32>
  }
}
// CHECK-LABEL: func.func @unknown_weight
// CHECK-NEXT:    %w = npu_graph.constant {weight = "nope"}
// CHECK-NEXT:    %t = npu_graph.transpose %w

// -----

// Does not fire inside a fused kernel, even on a constant defined in its body.
// CHECK-LABEL: func.func @inside_fused
// CHECK:         ^bb0(%p: tensor<2xf32>):
// CHECK-NEXT:      %c = npu_graph.constant
// CHECK-NEXT:      %d = npu_graph.add %c, %c
// CHECK-NEXT:      %e = npu_graph.add %p, %d
func.func @inside_fused(%x: tensor<2xf32>) -> tensor<2xf32> {
  %k = npu_graph.fused(%x) {kernel = "k", rule = "eltwise-chain"} : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%p: tensor<2xf32>):
    %c = npu_graph.constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
    %d = npu_graph.add %c, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %e = npu_graph.add %p, %d : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    npu_graph.yield %e : tensor<2xf32>
  }
  func.return %k : tensor<2xf32>
}
