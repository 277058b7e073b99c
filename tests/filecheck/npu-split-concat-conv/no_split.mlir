// RUN: %opt %s --split-input-file -p npu-split-concat-conv -o %t.mlir && filecheck %s < %t.mlir

// Must not fire: the concat's last part does not depend on the others (an Inception
// module's parallel branches: all are ready together).
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @independent(%x: tensor<1x8x4x4xf32>, %z: tensor<1x4x4x4xf32>) -> tensor<1x6x4x4xf32> {
    %c = npu_graph.constant {value = dense<0.1> : tensor<12x1x1xf32>} : tensor<12x1x1xf32>
    %w = npu_graph.constant {value = dense<0.25> : tensor<6x12x1x1xf32>} : tensor<6x12x1x1xf32>
    %x1 = npu_graph.concat %x, %z {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x12x4x4xf32>
    %a = npu_graph.add %x1, %c : (tensor<1x12x4x4xf32>, tensor<12x1x1xf32>) -> tensor<1x12x4x4xf32>
    %r = npu_graph.relu %a : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32>
    %y = npu_graph.conv2d %r, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x12x4x4xf32>, tensor<6x12x1x1xf32>) -> tensor<1x6x4x4xf32>
    func.return %y : tensor<1x6x4x4xf32>
  }
}
// CHECK-LABEL: func.func @independent
// CHECK:       %y = npu_graph.conv2d %r, %w

// -----

// Must not fire: the last part (8 channels, computed from x) is larger than the
// earlier ones (4): the conv over them would be the small one.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @last_larger(%x: tensor<1x4x4x4xf32>) -> tensor<1x6x4x4xf32> {
    %w1 = npu_graph.constant {value = dense<0.05> : tensor<8x4x1x1xf32>} : tensor<8x4x1x1xf32>
    %c = npu_graph.constant {value = dense<0.1> : tensor<12x1x1xf32>} : tensor<12x1x1xf32>
    %w = npu_graph.constant {value = dense<0.25> : tensor<6x12x1x1xf32>} : tensor<6x12x1x1xf32>
    %f = npu_graph.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
    %x1 = npu_graph.concat %x, %f {axis = 1 : i64} : (tensor<1x4x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x12x4x4xf32>
    %a = npu_graph.add %x1, %c : (tensor<1x12x4x4xf32>, tensor<12x1x1xf32>) -> tensor<1x12x4x4xf32>
    %r = npu_graph.relu %a : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32>
    %y = npu_graph.conv2d %r, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x12x4x4xf32>, tensor<6x12x1x1xf32>) -> tensor<1x6x4x4xf32>
    func.return %y : tensor<1x6x4x4xf32>
  }
}
// CHECK-LABEL: func.func @last_larger
// CHECK:       %y = npu_graph.conv2d %r, %w

// -----

// Must not fire: a grouped conv (its groups read fixed channel ranges), and a ReLU
// read twice (its other reader needs all its channels).
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @grouped(%x: tensor<1x8x4x4xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x12x4x4xf32>) {
    %w1 = npu_graph.constant {value = dense<0.05> : tensor<4x8x1x1xf32>} : tensor<4x8x1x1xf32>
    %wg = npu_graph.constant {value = dense<0.25> : tensor<6x4x1x1xf32>} : tensor<6x4x1x1xf32>
    %w = npu_graph.constant {value = dense<0.25> : tensor<6x12x1x1xf32>} : tensor<6x12x1x1xf32>
    %f = npu_graph.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x4x4xf32>
    %x1 = npu_graph.concat %x, %f {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x12x4x4xf32>
    %r = npu_graph.relu %x1 : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32>
    %yg = npu_graph.conv2d %r, %wg {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64} : (tensor<1x12x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32>
    %r2 = npu_graph.relu %x1 : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32>
    %y2 = npu_graph.conv2d %r2, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x12x4x4xf32>, tensor<6x12x1x1xf32>) -> tensor<1x6x4x4xf32>
    func.return %yg, %y2, %r2 : tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x12x4x4xf32>
  }
}
// CHECK-LABEL: func.func @grouped
// CHECK:       %yg = npu_graph.conv2d %r, %wg
// CHECK:       %y2 = npu_graph.conv2d %r2, %w

// -----

// Must not fire: the trial plan of the unsplit graph runs the conv on all four cores
// (a 3x3 conv to a 64 x 64 output, compute-bound): no core is idle for the split's convs to overlap.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @busy(%x: tensor<1x32x64x64xf32>) -> tensor<1x64x64x64xf32> {
    %w1 = npu_graph.constant {value = dense<0.05> : tensor<8x32x1x1xf32>} : tensor<8x32x1x1xf32>
    %c = npu_graph.constant {value = dense<0.1> : tensor<40x1x1xf32>} : tensor<40x1x1xf32>
    %w = npu_graph.constant {value = dense<0.25> : tensor<64x40x3x3xf32>} : tensor<64x40x3x3xf32>
    %f = npu_graph.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x64x64xf32>, tensor<8x32x1x1xf32>) -> tensor<1x8x64x64xf32>
    %x1 = npu_graph.concat %x, %f {axis = 1 : i64} : (tensor<1x32x64x64xf32>, tensor<1x8x64x64xf32>) -> tensor<1x40x64x64xf32>
    %a = npu_graph.add %x1, %c : (tensor<1x40x64x64xf32>, tensor<40x1x1xf32>) -> tensor<1x40x64x64xf32>
    %r = npu_graph.relu %a : (tensor<1x40x64x64xf32>) -> tensor<1x40x64x64xf32>
    %y = npu_graph.conv2d %r, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x40x64x64xf32>, tensor<64x40x3x3xf32>) -> tensor<1x64x64x64xf32>
    func.return %y : tensor<1x64x64x64xf32>
  }
}
// CHECK-LABEL: func.func @busy
// CHECK:       %y = npu_graph.conv2d %r, %w
