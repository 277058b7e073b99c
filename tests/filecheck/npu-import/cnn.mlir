// Conv/Relu/MaxPool/Flatten/Gemm: attributes are normalized (pads top, left,
// bottom, right), Flatten becomes npu_graph.reshape, shapes are computed.
// RUN: npu-import %S/Inputs/cnn.onnx -o %t.mlir && filecheck %s --input-file=%t.mlir

// CHECK:      func.func @main(%x: tensor<1x1x8x8xf32>
// CHECK:      npu_graph.conv2d %x, %{{.*}}, %{{.*}} {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}
// CHECK-SAME: -> tensor<1x2x8x8xf32> loc("/conv1/Conv")
// CHECK:      npu_graph.relu {{.*}} loc("/relu/Relu")
// CHECK:      npu_graph.maxpool {{.*}} {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>
// CHECK-SAME: -> tensor<1x2x4x4xf32> loc("/pool/MaxPool")
// CHECK:      npu_graph.reshape {{.*}} : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32> loc("/flatten/Flatten")
// CHECK:      npu_graph.gemm {{.*}} -> tensor<1x3xf32> loc("/fc/Gemm")
