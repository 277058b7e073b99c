// RUN: %opt %s --split-input-file -p npu-canonicalize | filecheck %s
// npu-canonicalize applies `GraphOp.decompose`: a transposed convolution becomes
// one stride-1 conv2d over all stride phases (sub-kernels stacked as output
// channels), a pixel shuffle (reshape, transpose, reshape) and a crop.

// U-Net's 2x2 stride-2 up-convolution: every phase has one tap (a 1x1 conv with
// 4x the channels), no crop. The weight rearrangement is graph ops on %w
// (npu-constant-fold folds them when %w is a constant); the bias repeats per phase.
// CHECK-LABEL: func.func @unet_up
// CHECK:         %[[FLAT:.*]] = npu_graph.reshape %w : (tensor<8x4x2x2xf32>) -> tensor<8x4x4xf32>
// CHECK-NEXT:    %[[PAD:.*]] = npu_graph.pad %[[FLAT]] {pads = array<i64: 0, 0, 0, 0, 0, 1>, value = 0.000000e+00 : f32}
// CHECK-NEXT:    %[[IDX:.*]] = npu_graph.constant {value = dense<{{\[\[\[\[}}0.000000e+00]], {{\[\[}}1.000000e+00]]], {{\[\[\[}}2.000000e+00]], {{\[\[}}3.000000e+00]]]]> : tensor<2x2x1x1xf32>}
// CHECK-NEXT:    %[[SUB:.*]] = npu_graph.gather %[[PAD]], %[[IDX]] {axis = 2 : i64} : (tensor<8x4x5xf32>, tensor<2x2x1x1xf32>) -> tensor<8x4x2x2x1x1xf32>
// CHECK-NEXT:    %[[G:.*]] = npu_graph.reshape %[[SUB]] : {{.*}} -> tensor<1x8x4x2x2x1x1xf32>
// CHECK-NEXT:    %[[T:.*]] = npu_graph.transpose %[[G]] {perm = array<i64: 0, 2, 3, 4, 1, 5, 6>} : {{.*}} -> tensor<1x4x2x2x8x1x1xf32>
// CHECK-NEXT:    %[[W:.*]] = npu_graph.reshape %[[T]] : {{.*}} -> tensor<16x8x1x1xf32>
// CHECK-NEXT:    %[[BCOL:.*]] = npu_graph.reshape %b : (tensor<4xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[ZERO:.*]] = npu_graph.constant {value = dense<0.000000e+00> : tensor<1x4xf32>}
// CHECK-NEXT:    %[[BREP:.*]] = npu_graph.add %[[BCOL]], %[[ZERO]] : (tensor<4x1xf32>, tensor<1x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %[[B:.*]] = npu_graph.reshape %[[BREP]] : (tensor<4x4xf32>) -> tensor<16xf32>
// CHECK-NEXT:    %[[C:.*]] = npu_graph.conv2d %x, %[[W]], %[[B]] {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32>
// CHECK-NEXT:    %[[P:.*]] = npu_graph.reshape %[[C]] : (tensor<1x16x6x6xf32>) -> tensor<1x4x2x2x6x6xf32>
// CHECK-NEXT:    %[[S:.*]] = npu_graph.transpose %[[P]] {perm = array<i64: 0, 1, 4, 2, 5, 3>} : (tensor<1x4x2x2x6x6xf32>) -> tensor<1x4x6x2x6x2xf32>
// CHECK-NEXT:    %[[Y:.*]] = npu_graph.reshape %[[S]] : (tensor<1x4x6x2x6x2xf32>) -> tensor<1x4x12x12xf32>
// CHECK-NEXT:    func.return %[[Y]]
// CHECK-NOT:     npu_graph.conv_transpose
func.func @unet_up(%x: tensor<1x8x6x6xf32>, %w: tensor<8x4x2x2xf32>, %b: tensor<4xf32>) -> tensor<1x4x12x12xf32> {
  %y = npu_graph.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<8x4x2x2xf32>, tensor<4xf32>) -> tensor<1x4x12x12xf32>
  func.return %y : tensor<1x4x12x12xf32>
}

// -----

// DCGAN's 4x4 stride-2 pad-1 layer: two taps per phase and dim (a 2x2 conv padded
// by 1), phase r of row a holds output row 2a + r - 1, so a slice crops one row and
// column at each border. The gather's indices pick kernel taps 3-j*2+r per phase.
// CHECK-LABEL: func.func @dcgan
// CHECK:         npu_graph.constant {value = dense<{{\[\[\[\[}}1.000000e+01, 8.000000e+00], [2.000000e+00, 0.000000e+00]], {{\[\[}}1.100000e+01, 9.000000e+00], [3.000000e+00, 1.000000e+00]]], {{\[\[\[}}1.400000e+01, 1.200000e+01], [6.000000e+00, 4.000000e+00]], {{\[\[}}1.500000e+01, 1.300000e+01], [7.000000e+00, 5.000000e+00]]]]> : tensor<2x2x2x2xf32>}
// CHECK:         %[[C:.*]] = npu_graph.conv2d %x, %{{.*}} {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<12x4x2x2xf32>) -> tensor<1x12x6x6xf32>
// CHECK:         %[[Y:.*]] = npu_graph.reshape %{{.*}} : (tensor<1x3x6x2x6x2xf32>) -> tensor<1x3x12x12xf32>
// CHECK-NEXT:    %[[CROP:.*]] = npu_graph.slice %[[Y]] {starts = array<i64: 0, 0, 1, 1>, ends = array<i64: 1, 3, 11, 11>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x3x12x12xf32>) -> tensor<1x3x10x10xf32>
// CHECK-NEXT:    func.return %[[CROP]]
func.func @dcgan(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x4x4xf32>) -> tensor<1x3x10x10xf32> {
  %y = npu_graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x4x4xf32>) -> tensor<1x3x10x10xf32>
  func.return %y : tensor<1x3x10x10xf32>
}

// -----

// Stride 1 is a plain conv2d with the flipped kernel (pad k-1-p): the pixel shuffle of
// one phase is an identity and the other canonicalization patterns remove it.
// Groups stay groups: 2 groups of 2 input channels, 3 outputs each.
// CHECK-LABEL: func.func @stride1_groups
// CHECK:         %[[C:.*]] = npu_graph.conv2d %x, %{{.*}} {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x5x5xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @stride1_groups(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x6x5x5xf32> {
  %y = npu_graph.conv_transpose %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x5x5xf32>
  func.return %y : tensor<1x6x5x5xf32>
}

// -----

// Must not fire: conv2d and the other ops have no decomposition and stay.
// CHECK-LABEL: func.func @conv_stays
// CHECK-NEXT:    %y = npu_graph.conv2d %x, %w
// CHECK-NEXT:    func.return %y
func.func @conv_stays(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}
