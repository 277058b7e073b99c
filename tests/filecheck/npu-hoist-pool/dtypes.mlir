// RUN: %opt %s -p npu-hoist-pool | filecheck %s

// hoist.mlir's LeNet conv-ReLU-pool in f16: the bias moved after the pool is an f16
// constant (an add computes in one float type).
builtin.module {
  func.func @main(%x: tensor<2x1x8x8xf16>) -> tensor<2x3x4x4xf16> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<[[[[0.5, -1.0], [1.0, 0.25]]], [[[-0.5, 1.0], [0.75, -1.0]]], [[[1.0, 1.0], [-1.0, 0.5]]]]> : tensor<3x1x2x2xf16>} : tensor<3x1x2x2xf16>
    %b = npu_graph.constant {value = dense<[0.5, -0.25, -2.0]> : tensor<3xf16>} : tensor<3xf16>
    %c = npu_graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>} : (tensor<2x1x8x8xf16>, tensor<3x1x2x2xf16>, tensor<3xf16>) -> tensor<2x3x8x8xf16> loc("/conv/Conv")
    %r = npu_graph.relu %c : (tensor<2x3x8x8xf16>) -> tensor<2x3x8x8xf16> loc("/relu/Relu")
    %y = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf16>) -> tensor<2x3x4x4xf16> loc("/pool/MaxPool")
    func.return %y : tensor<2x3x4x4xf16>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:         %[[B:.*]] = npu_graph.constant {value = dense<{{\[}}{{\[}}[5.000000e-01]], {{\[}}[-2.500000e-01]], {{\[}}[-2.000000e+00]]]> : tensor<3x1x1xf16>}
// CHECK-NEXT:    %c = npu_graph.conv2d %x, %w {{.*}} : (tensor<2x1x8x8xf16>, tensor<3x1x2x2xf16>) -> tensor<2x3x8x8xf16>
// CHECK-NEXT:    %[[P:.*]] = npu_graph.maxpool %c {{.*}} -> tensor<2x3x4x4xf16>
// CHECK-NEXT:    %[[A:.*]] = npu_graph.add %[[P]], %[[B]] : (tensor<2x3x4x4xf16>, tensor<3x1x1xf16>) -> tensor<2x3x4x4xf16>
