// RUN: %opt %s --split-input-file -p npu-bn-fold | filecheck %s

// A per-channel multiply-add followed by another (a BatchNorm then a scale layer):
// (x * 2 + 1) * 3 + 4 = x * 6 + 7, one multiply-add.
builtin.module {
  func.func @two_affines(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
    %m1 = npu_graph.constant {value = dense<2.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %a1 = npu_graph.constant {value = dense<1.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %m2 = npu_graph.constant {value = dense<3.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %a2 = npu_graph.constant {value = dense<4.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %p = npu_graph.mul %x, %m1 : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("bn")
    %q = npu_graph.add %p, %a1 : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("bn")
    %r = npu_graph.mul %q, %m2 : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("scale")
    %s = npu_graph.add %r, %a2 : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("scale")
    func.return %s : tensor<1x2x4x4xf32>
  }
}
// CHECK-LABEL: func.func @two_affines
// CHECK:       %[[M:.*]] = npu_graph.constant {value = dense<6.000000e+00> : tensor<2x1x1xf32>}
// CHECK-NEXT:  %[[P:.*]] = npu_graph.mul %x, %[[M]]
// CHECK-NEXT:  %[[A:.*]] = npu_graph.constant {value = dense<7.000000e+00> : tensor<2x1x1xf32>}
// CHECK-NEXT:  %{{.*}} = npu_graph.add %[[P]], %[[A]]
// CHECK-NEXT:  func.return

// -----

// Must not fire: the inner result is also returned, and an operand that is not a
// constant.
builtin.module {
  func.func @no_merge(%x: tensor<1x2x4x4xf32>, %y: tensor<2x1x1xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
    %m1 = npu_graph.constant {value = dense<2.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %m2 = npu_graph.constant {value = dense<3.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %p = npu_graph.mul %x, %m1 : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %q = npu_graph.mul %p, %m2 : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %r = npu_graph.mul %x, %y : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %s = npu_graph.mul %r, %m2 : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    func.return %p, %q, %s : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  }
}
// CHECK-LABEL: func.func @no_merge
// CHECK:       %p = npu_graph.mul %x, %m1
// CHECK-NEXT:  %q = npu_graph.mul %p, %m2
// CHECK-NEXT:  %r = npu_graph.mul %x, %y
// CHECK-NEXT:  %s = npu_graph.mul %r, %m2

// -----

// Rank-0 operands (a reduction without keepdims, then a Sum of it and a constant, then
// a Mul; found by the fuzzer): the merged constants stay rank 0 (they came out [1]).
builtin.module {
  func.func @scalars(%x: tensor<f32>) -> tensor<f32> {
    %c = npu_graph.constant {value = dense<1.5> : tensor<f32>} : tensor<f32>
    %a = npu_graph.add %x, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %m = npu_graph.mul %a, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
    func.return %m : tensor<f32>
  }
}
// CHECK-LABEL: func.func @scalars
// CHECK:       %[[M:.*]] = npu_graph.constant {value = dense<1.500000e+00> : tensor<f32>} : tensor<f32>
// CHECK-NEXT:  %[[A:.*]] = npu_graph.constant {value = dense<2.250000e+00> : tensor<f32>} : tensor<f32>
// CHECK-NEXT:  %[[P:.*]] = npu_graph.mul %x, %[[M]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:  %{{.*}} = npu_graph.add %[[P]], %[[A]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
