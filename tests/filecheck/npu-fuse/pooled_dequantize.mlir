// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s

// A dequantize read only by an average (or sum) pool stays out of the product's
// epilogue: the product's kernel writes the 8-bit tensor, and the pool's kernel or
// strip group reads it and dequantizes on chip (a QDQ DenseNet's transition: conv,
// requantize, dequantize, average pool), not 4-byte floats written and read back.
// CHECK-LABEL: func.func @transition
// CHECK:         %[[K:.*]] = npu_graph.fused(%x, %w, %m, %z) {kernel = "npu_graph.conv2d", rule = "conv-epilogue"}
// CHECK:           npu_graph.conv2d
// CHECK-NEXT:      npu_graph.requantize
// CHECK-NEXT:      npu_graph.yield
// CHECK:         %d = npu_graph.dequantize %[[K]], %s, %z
// CHECK-NEXT:    %p = npu_graph.avgpool %d
func.func @transition(%x: tensor<1x8x8x8xi8>, %w: tensor<4x8x1x1xi8>, %m: tensor<f32>, %s: tensor<f32>, %z: tensor<f32>) -> tensor<1x4x4x4xf32> {
  %acc = npu_graph.conv2d %x, %w : (tensor<1x8x8x8xi8>, tensor<4x8x1x1xi8>) -> tensor<1x4x8x8xi32>
  %r = npu_graph.requantize %acc, %m, %z : (tensor<1x4x8x8xi32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xi8>
  %d = npu_graph.dequantize %r, %s, %z : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %p = npu_graph.avgpool %d {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return %p : tensor<1x4x4x4xf32>
}

// -----

// A sum pool too (an average pool of a padded 8-bit tensor, npu-fuse-qdq's).
// CHECK-LABEL: func.func @sumpool
// CHECK:           npu_graph.requantize
// CHECK-NEXT:      npu_graph.yield
// CHECK:         %d = npu_graph.dequantize
// CHECK-NEXT:    %p = npu_graph.sumpool %d
func.func @sumpool(%x: tensor<1x8x8x8xi8>, %w: tensor<4x8x1x1xi8>, %m: tensor<f32>, %s: tensor<f32>, %z: tensor<f32>) -> tensor<1x4x4x4xf32> {
  %acc = npu_graph.conv2d %x, %w : (tensor<1x8x8x8xi8>, tensor<4x8x1x1xi8>) -> tensor<1x4x8x8xi32>
  %r = npu_graph.requantize %acc, %m, %z : (tensor<1x4x8x8xi32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xi8>
  %d = npu_graph.dequantize %r, %s, %z : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %p = npu_graph.sumpool %d {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return %p : tensor<1x4x4x4xf32>
}

// -----

// Joined: a dequantize read by another op (a float sigmoid), or read twice.
// CHECK-LABEL: func.func @other_reader
// CHECK:           npu_graph.requantize
// CHECK-NEXT:      npu_graph.dequantize
// CHECK-NEXT:      npu_graph.sigmoid
// CHECK-NEXT:      npu_graph.yield
func.func @other_reader(%x: tensor<1x8x8x8xi8>, %w: tensor<4x8x1x1xi8>, %m: tensor<f32>, %s: tensor<f32>, %z: tensor<f32>) -> tensor<1x4x8x8xf32> {
  %acc = npu_graph.conv2d %x, %w : (tensor<1x8x8x8xi8>, tensor<4x8x1x1xi8>) -> tensor<1x4x8x8xi32>
  %r = npu_graph.requantize %acc, %m, %z : (tensor<1x4x8x8xi32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xi8>
  %d = npu_graph.dequantize %r, %s, %z : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %g = npu_graph.sigmoid %d : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %g : tensor<1x4x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @read_twice
// CHECK:           npu_graph.requantize
// CHECK-NEXT:      npu_graph.dequantize
// CHECK-NEXT:      npu_graph.yield
// CHECK:         npu_graph.avgpool
// CHECK:         npu_graph.maxpool
func.func @read_twice(%x: tensor<1x8x8x8xi8>, %w: tensor<4x8x1x1xi8>, %m: tensor<f32>, %s: tensor<f32>, %z: tensor<f32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %acc = npu_graph.conv2d %x, %w : (tensor<1x8x8x8xi8>, tensor<4x8x1x1xi8>) -> tensor<1x4x8x8xi32>
  %r = npu_graph.requantize %acc, %m, %z : (tensor<1x4x8x8xi32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xi8>
  %d = npu_graph.dequantize %r, %s, %z : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %p = npu_graph.avgpool %d {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %q = npu_graph.maxpool %d {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return %p, %q : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}
