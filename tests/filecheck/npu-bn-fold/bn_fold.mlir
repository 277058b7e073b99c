// RUN: %opt %s --split-input-file -p npu-bn-fold -o %t.mlir && filecheck %s < %t.mlir
// RUN: npu-opt %s --print-debuginfo --split-input-file -p npu-bn-fold -o %t.loc.mlir && filecheck %s --check-prefix=LOC < %t.loc.mlir
// npu-bn-fold: batchnorm(conv2d(x, W, b)) with constant weights and parameters, the
// conv used only by the batchnorm -> conv2d(x, W * mul, b * mul + offset), new
// weights in the weight file. (Numerics: tests/test_graph_passes.py.)

// Conv with bias; the folded conv keeps strides/pads and both ONNX nodes.
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @with_bias(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x4x4xf32> {
    %w = npu_graph.constant {weight = "conv.w"} : tensor<4x3x3x3xf32>
    %b = npu_graph.constant {weight = "conv.b"} : tensor<4xf32>
    %s = npu_graph.constant {value = dense<[1.0, 2.0, 0.5, 1.0]> : tensor<4xf32>} : tensor<4xf32>
    %o = npu_graph.constant {value = dense<[0.0, 1.0, 0.5, 1.0]> : tensor<4xf32>} : tensor<4xf32>
    %m = npu_graph.constant {value = dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>} : tensor<4xf32>
    %v = npu_graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
    %c = npu_graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32> loc("/conv/Conv")
    %y = npu_graph.batchnorm %c, %s, %o, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<1x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32> loc("/bn/BatchNormalization")
    func.return %y : tensor<1x4x4x4xf32>
  }
}
// CHECK-LABEL: func.func @with_bias
// CHECK-NEXT:    %[[W:.*]] = npu_graph.constant {weight = "conv_Conv.bn_weight"} : tensor<4x3x3x3xf32>
// CHECK-NEXT:    %[[B:.*]] = npu_graph.constant {value = dense<[{{.*}}]> : tensor<4xf32>} : tensor<4xf32>
// CHECK-NEXT:    %y = npu_graph.conv2d %x, %[[W]], %[[B]] {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}
// CHECK-NEXT:    func.return %y
// LOC-LABEL:   func.func @with_bias
// LOC:           npu_graph.conv2d {{.*}} loc(fused["/conv/Conv", "/bn/BatchNormalization"])

// -----

// Conv without bias: the bias is the batchnorm offset, here exactly
// mul = scale / sqrt(var) = [1, 1, 2, 3], offset = bias - mean * mul.
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @no_bias(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x6x6xf32> {
    %w = npu_graph.constant {weight = "conv.w"} : tensor<4x3x3x3xf32>
    %s = npu_graph.constant {value = dense<[1.0, 2.0, 1.0, 3.0]> : tensor<4xf32>} : tensor<4xf32>
    %o = npu_graph.constant {value = dense<[0.0, 1.0, 0.0, -1.0]> : tensor<4xf32>} : tensor<4xf32>
    %m = npu_graph.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
    %v = npu_graph.constant {value = dense<[1.0, 4.0, 0.25, 1.0]> : tensor<4xf32>} : tensor<4xf32>
    %c = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    %y = npu_graph.batchnorm %c, %s, %o, %m, %v {epsilon = 0.0 : f32} : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
    func.return %y : tensor<1x4x6x6xf32>
  }
}
// CHECK-LABEL: func.func @no_bias
// CHECK:         %[[B:.*]] = npu_graph.constant {value = dense<[-1.000000e+00, 0.000000e+00, -2.000000e+00, -4.000000e+00]> : tensor<4xf32>}
// CHECK-NEXT:    %y = npu_graph.conv2d %x, %{{.*}}, %[[B]]
// CHECK-NOT:     npu_graph.batchnorm

// -----

// A depthwise conv (group 4): each output channel's filter is scaled; group is kept.
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @depthwise(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x4x4xf32> {
    %w = npu_graph.constant {weight = "dw.w"} : tensor<4x1x3x3xf32>
    %p = npu_graph.constant {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
    %c = npu_graph.conv2d %x, %w {group = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
    %y = npu_graph.batchnorm %c, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : (tensor<1x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
    func.return %y : tensor<1x4x4x4xf32>
  }
}
// CHECK-LABEL: func.func @depthwise
// CHECK:         %y = npu_graph.conv2d %x, {{.*}} group = 4 : i64}
// CHECK-NOT:     npu_graph.batchnorm

// -----

// Does not fire: a batchnorm parameter is computed at run time (a function argument).
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @param_not_constant(%x: tensor<1x3x8x8xf32>, %s: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
    %w = npu_graph.constant {weight = "conv.w"} : tensor<4x3x3x3xf32>
    %p = npu_graph.constant {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
    %c = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    %y = npu_graph.batchnorm %c, %s, %p, %p, %p : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
    func.return %y : tensor<1x4x6x6xf32>
  }
}
// CHECK-LABEL: func.func @param_not_constant
// CHECK:         %c = npu_graph.conv2d %x, %w
// CHECK-NEXT:    %y = npu_graph.batchnorm %c, %s, %p, %p, %p

// -----

// Does not fold into the conv (its weight is not a constant): the batchnorm becomes
// a per-channel multiply-add instead.
func.func @weight_not_constant(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %p = npu_graph.constant {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
  %c = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %y = npu_graph.batchnorm %c, %p, %p, %p, %p : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}
// CHECK-LABEL: func.func @weight_not_constant
// CHECK:         %c = npu_graph.conv2d %x, %w
// CHECK-NEXT:    %[[M:.*]] = npu_graph.constant {value = dense<0.707099736> : tensor<4x1x1xf32>}
// CHECK-NEXT:    %[[O:.*]] = npu_graph.constant {value = dense<0.146450147> : tensor<4x1x1xf32>}
// CHECK-NEXT:    %[[S:.*]] = npu_graph.mul %c, %[[M]] : (tensor<1x4x6x6xf32>, tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    %y = npu_graph.add %[[S]], %[[O]]
// CHECK-NOT:     npu_graph.batchnorm

// -----

// Does not fold into the conv (its result is also returned): multiply-add instead.
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @conv_shared(%x: tensor<1x3x8x8xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
    %w = npu_graph.constant {weight = "conv.w"} : tensor<4x3x3x3xf32>
    %p = npu_graph.constant {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
    %c = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    %y = npu_graph.batchnorm %c, %p, %p, %p, %p : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
    func.return %c, %y : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
  }
}
// CHECK-LABEL: func.func @conv_shared
// CHECK:         %c = npu_graph.conv2d %x, %w
// CHECK:         %[[S:.*]] = npu_graph.mul %c,
// CHECK-NEXT:    %y = npu_graph.add %[[S]],
// CHECK-NEXT:    func.return %c, %y

// -----

// The batchnorm does not follow a conv (a relu is in between): multiply-add.
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @not_after_conv(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x6x6xf32> {
    %w = npu_graph.constant {weight = "conv.w"} : tensor<4x3x3x3xf32>
    %p = npu_graph.constant {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
    %c = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    %r = npu_graph.relu %c : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
    %y = npu_graph.batchnorm %r, %p, %p, %p, %p : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
    func.return %y : tensor<1x4x6x6xf32>
  }
}
// CHECK-LABEL: func.func @not_after_conv
// CHECK:         %c = npu_graph.conv2d %x, %w
// CHECK-NEXT:    %r = npu_graph.relu %c
// CHECK:         %[[S:.*]] = npu_graph.mul %r,
// CHECK-NEXT:    %y = npu_graph.add %[[S]],
