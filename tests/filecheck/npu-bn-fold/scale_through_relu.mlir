// RUN: %opt %s -p npu-bn-fold | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// A pre-activation BN-ReLU-conv (DenseNet): the BatchNorm becomes x * a + o, and
// with a > 0, relu(x * a + o) = relu(x + o / a) * a, so the scale moves into the
// conv's weights (per input channel: W[:, c] * a[c]) and the conv's prologue keeps
// an add and the ReLU. Here a = [2, 4], o = [1, -2]: the shift is o / a = [0.5,
// -0.5] and the 1x1 weights [[1, 1]] become [[2, 4]]; the padding stays zero (it
// pads the ReLU's output).
builtin.module {
  func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x1x6x6xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %a = npu_graph.constant {value = dense<[[[2.0]], [[4.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %o = npu_graph.constant {value = dense<[[[1.0]], [[-2.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %w = npu_graph.constant {value = dense<1.0> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
    %b = npu_graph.constant {value = dense<0.5> : tensor<1xf32>} : tensor<1xf32>
    %p = npu_graph.mul %x, %a : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("bn")
    %q = npu_graph.add %p, %o : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("bn")
    %r = npu_graph.relu %q : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu")
    %y = npu_graph.conv2d %r, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>, tensor<1xf32>) -> tensor<1x1x6x6xf32> loc("conv")
    func.return %y : tensor<1x1x6x6xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %[[O:.*]] = npu_graph.constant {value = dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}-5.000000e-01]]]> : tensor<2x1x1xf32>}
// CHECK-NEXT:  %[[S:.*]] = npu_graph.add %x, %[[O]] : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  %[[R:.*]] = npu_graph.relu %[[S]]
// CHECK-NEXT:  %[[W:.*]] = npu_graph.constant {value = dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}4.000000e+00]]]]> : tensor<1x2x1x1xf32>}
// CHECK-NEXT:  %{{.*}} = npu_graph.conv2d %[[R]], %[[W]], %b {{.*}}pads = array<i64: 1, 1, 1, 1>
// CHECK-NOT:   npu_graph.mul
// SIM: check:       ok vs numpy float64 reference
