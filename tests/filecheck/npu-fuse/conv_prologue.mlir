// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s
// RUN: %opt %s --split-input-file -p 'npu-fuse{disable=conv-prologue}' | filecheck %s --check-prefix=OFF

// conv-prologue: a pre-activation BN-ReLU (multiply-add by [C, 1, 1] constants,
// relu) in front of an unpadded 1x1 conv joins the conv's kernel; with the relu
// after the conv it is also an epilogue.
builtin.module {
  func.func @pre_activation(%x: tensor<1x8x4x4xf32>) -> tensor<1x4x4x4xf32> {
    %m = npu_graph.constant {value = dense<2.0> : tensor<8x1x1xf32>} : tensor<8x1x1xf32>
    %a = npu_graph.constant {value = dense<-1.0> : tensor<8x1x1xf32>} : tensor<8x1x1xf32>
    %w = npu_graph.constant {value = dense<0.5> : tensor<4x8x1x1xf32>} : tensor<4x8x1x1xf32>
    %s = npu_graph.mul %x, %m : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
    %t = npu_graph.add %s, %a : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
    %r = npu_graph.relu %t : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    %c = npu_graph.conv2d %r, %w : (tensor<1x8x4x4xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x4x4xf32> loc("conv")
    %o = npu_graph.relu %c : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    func.return %o : tensor<1x4x4x4xf32>
  }
}
// CHECK-LABEL: func.func @pre_activation
// CHECK:         %o = npu_graph.fused(%x, %m, %a, %w) {kernel = "conv", rule = "conv-prologue,conv-epilogue"}
// CHECK-NEXT:    ^bb0(%0: tensor<1x8x4x4xf32>, %1: tensor<8x1x1xf32>, %2: tensor<8x1x1xf32>, %3: tensor<4x8x1x1xf32>):
// CHECK-NEXT:      %s = npu_graph.mul %0, %1
// CHECK-NEXT:      %t = npu_graph.add %s, %2
// CHECK-NEXT:      %r = npu_graph.relu %t
// CHECK-NEXT:      %c = npu_graph.conv2d %r, %3
// CHECK-NEXT:      %o_1 = npu_graph.relu %c
// CHECK-NEXT:      npu_graph.yield %o_1
// Switched off: the chain is an elementwise kernel of its own, the conv keeps its epilogue.
// OFF-LABEL: func.func @pre_activation
// OFF:         npu_graph.fused(%x, %m, %a) {kernel = "npu_graph.mul", rule = "eltwise-chain"}
// OFF:         npu_graph.fused(%{{.*}}, %w) {kernel = "conv", rule = "conv-epilogue"}

// -----

// Must not fire: a padded conv (relu(0 * 2 - 1) would not be the padding zero).
builtin.module {
  func.func @padded(%x: tensor<1x8x4x4xf32>) -> tensor<1x4x4x4xf32> {
    %a = npu_graph.constant {value = dense<-1.0> : tensor<8x1x1xf32>} : tensor<8x1x1xf32>
    %w = npu_graph.constant {value = dense<0.5> : tensor<4x8x3x3xf32>} : tensor<4x8x3x3xf32>
    %t = npu_graph.add %x, %a : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
    %c = npu_graph.conv2d %t, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x4x4xf32>
    func.return %c : tensor<1x4x4x4xf32>
  }
}
// CHECK-LABEL: func.func @padded
// CHECK:         %t = npu_graph.add %x, %a
// CHECK-NEXT:    %c = npu_graph.conv2d %t, %w
// CHECK-NOT:     npu_graph.fused

// -----

// Must not fire: an operand that varies over H and W (not per channel), and a
// link whose result is also used elsewhere (it must be stored anyway).
builtin.module {
  func.func @not_per_channel(%x: tensor<1x8x4x4xf32>, %y: tensor<1x8x4x4xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x8x4x4xf32>) {
    %w = npu_graph.constant {value = dense<0.5> : tensor<4x8x1x1xf32>} : tensor<4x8x1x1xf32>
    %t = npu_graph.add %x, %y : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    %c = npu_graph.conv2d %t, %w : (tensor<1x8x4x4xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x4x4xf32>
    %r = npu_graph.relu %x : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    %d = npu_graph.conv2d %r, %w : (tensor<1x8x4x4xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x4x4xf32>
    func.return %c, %d, %r : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x8x4x4xf32>
  }
}
// CHECK-LABEL: func.func @not_per_channel
// CHECK-NOT:     npu_graph.fused
// CHECK:         %c = npu_graph.conv2d %t, %w
// CHECK:         %d = npu_graph.conv2d %r, %w

// -----

// A lookup table in front of an unpadded integer 1x1 conv (a QDQ DenseNet layer's
// BatchNorm-ReLU as npu-fuse-qdq's per-channel table) joins the conv's kernel too.
builtin.module {
  func.func @table(%x: tensor<1x8x4x4xi8>, %lut: tensor<8x256xi8>, %w: tensor<4x8x1x1xi8>) -> tensor<1x4x4x4xi32> {
    %t = npu_graph.table %x, %lut {axis = 1 : i64} : (tensor<1x8x4x4xi8>, tensor<8x256xi8>) -> tensor<1x8x4x4xi8>
    %c = npu_graph.conv2d %t, %w : (tensor<1x8x4x4xi8>, tensor<4x8x1x1xi8>) -> tensor<1x4x4x4xi32> loc("conv")
    func.return %c : tensor<1x4x4x4xi32>
  }
}
// CHECK-LABEL: func.func @table
// CHECK:         %c = npu_graph.fused(%x, %lut, %w) {kernel = "conv", rule = "conv-prologue"}
// CHECK-NEXT:    ^bb0(%0: tensor<1x8x4x4xi8>, %1: tensor<8x256xi8>, %2: tensor<4x8x1x1xi8>):
// CHECK-NEXT:      %t = npu_graph.table %0, %1 {axis = 1 : i64}
// CHECK-NEXT:      %c_1 = npu_graph.conv2d %t, %2

// -----

// Must not fire: a table along another dim than the channels (its rows would follow H).
builtin.module {
  func.func @table_along_h(%x: tensor<1x8x4x4xi8>, %lut: tensor<4x256xi8>, %w: tensor<4x8x1x1xi8>) -> tensor<1x4x4x4xi32> {
    %t = npu_graph.table %x, %lut {axis = 2 : i64} : (tensor<1x8x4x4xi8>, tensor<4x256xi8>) -> tensor<1x8x4x4xi8>
    %c = npu_graph.conv2d %t, %w : (tensor<1x8x4x4xi8>, tensor<4x8x1x1xi8>) -> tensor<1x4x4x4xi32>
    func.return %c : tensor<1x4x4x4xi32>
  }
}
// CHECK-LABEL: func.func @table_along_h
// CHECK:         %t = npu_graph.table %x, %lut {axis = 2 : i64}
// CHECK-NEXT:    %c = npu_graph.conv2d %t, %w
// CHECK-NOT:     npu_graph.fused
