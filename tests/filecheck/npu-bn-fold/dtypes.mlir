// RUN: %opt %s --split-input-file -p npu-bn-fold -o %t.mlir && filecheck %s < %t.mlir

// An f16 conv's folded weights and bias are f16 constants (a conv computes in one
// float type), as the affine form of a batchnorm without a conv.
builtin.module {
  func.func @conv(%x: tensor<1x3x8x8xf16>) -> tensor<1x4x4x4xf16> {
    %w = npu_graph.constant {value = dense<0.5> : tensor<4x3x3x3xf16>} : tensor<4x3x3x3xf16>
    %b = npu_graph.constant {value = dense<[0.0, 1.0, 2.0, 3.0]> : tensor<4xf16>} : tensor<4xf16>
    %s = npu_graph.constant {value = dense<[1.0, 2.0, 0.5, 1.0]> : tensor<4xf16>} : tensor<4xf16>
    %o = npu_graph.constant {value = dense<[0.0, 1.0, 0.5, 1.0]> : tensor<4xf16>} : tensor<4xf16>
    %m = npu_graph.constant {value = dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf16>} : tensor<4xf16>
    %v = npu_graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf16>} : tensor<4xf16>
    %c = npu_graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>, tensor<4xf16>) -> tensor<1x4x4x4xf16>
    %y = npu_graph.batchnorm %c, %s, %o, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<1x4x4x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<1x4x4x4xf16>
    func.return %y : tensor<1x4x4x4xf16>
  }
}
// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %[[W:.*]] = npu_graph.constant {{.*}} : tensor<4x3x3x3xf16>
// CHECK-NEXT:    %[[B:.*]] = npu_graph.constant {{.*}} : tensor<4xf16>
// CHECK-NEXT:    %y = npu_graph.conv2d %x, %[[W]], %[[B]] {{.*}} : (tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>, tensor<4xf16>) -> tensor<1x4x4x4xf16>

// -----

builtin.module {
  func.func @affine(%x: tensor<1x4x4x4xbf16>) -> tensor<1x4x4x4xbf16> {
    %s = npu_graph.constant {value = dense<[1.0, 2.0, 0.5, 1.0]> : tensor<4xbf16>} : tensor<4xbf16>
    %o = npu_graph.constant {value = dense<[0.0, 1.0, 0.5, 1.0]> : tensor<4xbf16>} : tensor<4xbf16>
    %m = npu_graph.constant {value = dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xbf16>} : tensor<4xbf16>
    %v = npu_graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xbf16>} : tensor<4xbf16>
    %y = npu_graph.batchnorm %x, %s, %o, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<1x4x4x4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>) -> tensor<1x4x4x4xbf16>
    func.return %y : tensor<1x4x4x4xbf16>
  }
}
// CHECK-LABEL: func.func @affine
// CHECK-NEXT:    %[[M:.*]] = npu_graph.constant {{.*}} : tensor<4x1x1xbf16>
// CHECK-NEXT:    %[[O:.*]] = npu_graph.constant {{.*}} : tensor<4x1x1xbf16>
// CHECK-NEXT:    %[[S:.*]] = npu_graph.mul %x, %[[M]] : (tensor<1x4x4x4xbf16>, tensor<4x1x1xbf16>) -> tensor<1x4x4x4xbf16>
// CHECK-NEXT:    %y = npu_graph.add %[[S]], %[[O]] : (tensor<1x4x4x4xbf16>, tensor<4x1x1xbf16>) -> tensor<1x4x4x4xbf16>
