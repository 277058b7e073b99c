// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s

// An integer residual add (npu-fuse-qdq's FuseBinary) is elementwise on both operands: it
// joins a conv's epilogue after the requantize whichever operand the conv's chain is.
// CHECK-LABEL: func.func @conv_qadd
// CHECK:         npu_graph.fused(%x, %w, %m, %z, %skip) {kernel = "npu_graph.conv2d", rule = "conv-epilogue"}
// CHECK:           npu_graph.conv2d
// CHECK-NEXT:      npu_graph.requantize
// CHECK-NEXT:      npu_graph.qadd
// CHECK-NEXT:      npu_graph.yield
func.func @conv_qadd(%x: tensor<1x8x6x6xi8>, %w: tensor<8x8x1x1xi8>, %m: tensor<f32>, %z: tensor<f32>, %skip: tensor<1x8x6x6xi8>) -> tensor<1x8x6x6xi8> {
  %acc = npu_graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xi8>, tensor<8x8x1x1xi8>) -> tensor<1x8x6x6xi32>
  %r = npu_graph.requantize %acc, %m, %z : (tensor<1x8x6x6xi32>, tensor<f32>, tensor<f32>) -> tensor<1x8x6x6xi8>
  %y = npu_graph.qadd %skip, %r {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.0 : f32, min = 0 : i64} : (tensor<1x8x6x6xi8>, tensor<1x8x6x6xi8>) -> tensor<1x8x6x6xi8>
  func.return %y : tensor<1x8x6x6xi8>
}

// -----

// Not joined: the conv's chain is the operand qadd broadcasts (its tile would be read
// at other positions than it is computed); the qadd is a kernel of its own.
// CHECK-LABEL: func.func @broadcast_operand
// CHECK:         npu_graph.fused
// CHECK:           npu_graph.requantize
// CHECK-NEXT:      npu_graph.yield
// CHECK:         %y = npu_graph.qadd %skip, %r
func.func @broadcast_operand(%x: tensor<1x8x1x1xi8>, %w: tensor<8x8x1x1xi8>, %m: tensor<f32>, %z: tensor<f32>, %skip: tensor<1x8x6x6xi8>) -> tensor<1x8x6x6xi8> {
  %acc = npu_graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x1x1xi8>, tensor<8x8x1x1xi8>) -> tensor<1x8x1x1xi32>
  %r = npu_graph.requantize %acc, %m, %z : (tensor<1x8x1x1xi32>, tensor<f32>, tensor<f32>) -> tensor<1x8x1x1xi8>
  %y = npu_graph.qadd %skip, %r {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.0 : f32} : (tensor<1x8x6x6xi8>, tensor<1x8x1x1xi8>) -> tensor<1x8x6x6xi8>
  func.return %y : tensor<1x8x6x6xi8>
}
