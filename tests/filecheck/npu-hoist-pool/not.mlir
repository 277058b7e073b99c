// RUN: %opt %s --split-input-file -p npu-hoist-pool | filecheck %s
// npu-hoist-pool must not fire: each case prints as it came in.

// A stride-1 pool (as many elements after as before: nothing to save); a ReLU read
// twice; an add whose other operand varies over the pooled dims; x subtracted (not
// non-decreasing in x); a sigmoid (not in the exact set); a conv read twice.
builtin.module {
  func.func @main(%x: tensor<1x2x4x4xf32>, %s: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>) attributes {npu.inputs = ["x", "s"], npu.outputs = ["y0", "y1", "r1", "y2", "y3", "y4", "y5", "c5"]} {
    %o = npu_graph.constant {value = dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %w = npu_graph.constant {value = dense<1.0> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
    %b = npu_graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
    %r0 = npu_graph.relu %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %y0 = npu_graph.maxpool %r0 {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %r1 = npu_graph.relu %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %y1 = npu_graph.maxpool %r1 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
    %a2 = npu_graph.add %x, %s : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %y2 = npu_graph.maxpool %a2 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
    %a3 = npu_graph.sub %o, %x : (tensor<2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %y3 = npu_graph.maxpool %a3 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
    %a4 = npu_graph.sigmoid %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %y4 = npu_graph.maxpool %a4 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
    %c5 = npu_graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    %y5 = npu_graph.maxpool %c5 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
    func.return %y0, %y1, %r1, %y2, %y3, %y4, %y5, %c5 : tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:         %r0 = npu_graph.relu %x
// CHECK-NEXT:    %y0 = npu_graph.maxpool %r0
// CHECK-NEXT:    %r1 = npu_graph.relu %x
// CHECK-NEXT:    %y1 = npu_graph.maxpool %r1
// CHECK-NEXT:    %a2 = npu_graph.add %x, %s
// CHECK-NEXT:    %y2 = npu_graph.maxpool %a2
// CHECK-NEXT:    %a3 = npu_graph.sub %o, %x
// CHECK-NEXT:    %y3 = npu_graph.maxpool %a3
// CHECK-NEXT:    %a4 = npu_graph.sigmoid %x
// CHECK-NEXT:    %y4 = npu_graph.maxpool %a4
// CHECK-NEXT:    %c5 = npu_graph.conv2d %x, %w, %b
// CHECK-NEXT:    %y5 = npu_graph.maxpool %c5

// -----

// A conv bias that is not a constant (a graph input); a ReLU whose result is broadcast
// (its input is smaller than its result).
builtin.module {
  func.func @main(%x: tensor<1x2x4x4xf32>, %b: tensor<2xf32>, %t: tensor<1x2x1x4xf32>, %z: tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) attributes {npu.inputs = ["x", "b", "t", "z"], npu.outputs = ["y0", "y1"]} {
    %w = npu_graph.constant {value = dense<1.0> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
    %c0 = npu_graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    %y0 = npu_graph.maxpool %c0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
    %a1 = npu_graph.max %t, %z : (tensor<1x2x1x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %y1 = npu_graph.maxpool %a1 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
    func.return %y0, %y1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:         %c0 = npu_graph.conv2d %x, %w, %b
// CHECK-NEXT:    %y0 = npu_graph.maxpool %c0
// CHECK-NEXT:    %a1 = npu_graph.max %t, %z
// CHECK-NEXT:    %y1 = npu_graph.maxpool %a1
