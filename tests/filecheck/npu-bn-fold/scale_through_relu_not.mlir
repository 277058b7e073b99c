// RUN: %opt %s -p npu-bn-fold | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// Must not fire: a scale that is not positive (relu(-x) is not -relu(x)), a ReLU
// read twice, and a grouped conv.
builtin.module {
  func.func @main(%x: tensor<1x2x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) attributes {npu.inputs = ["x"], npu.outputs = ["y0", "y1", "r1", "y2"]} {
    %neg = npu_graph.constant {value = dense<[[[2.0]], [[-1.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %pos = npu_graph.constant {value = dense<2.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %o = npu_graph.constant {value = dense<1.0> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %w = npu_graph.constant {value = dense<1.0> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
    %wg = npu_graph.constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
    %p0 = npu_graph.mul %x, %neg : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %q0 = npu_graph.add %p0, %o : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %r0 = npu_graph.relu %q0 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %y0 = npu_graph.conv2d %r0, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32>
    %p1 = npu_graph.mul %x, %pos : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %q1 = npu_graph.add %p1, %o : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %r1 = npu_graph.relu %q1 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %y1 = npu_graph.conv2d %r1, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32>
    %p2 = npu_graph.mul %x, %pos : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %q2 = npu_graph.add %p2, %o : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %r2 = npu_graph.relu %q2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %y2 = npu_graph.conv2d %r2, %wg {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
    func.return %y0, %y1, %r1, %y2 : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %p0 = npu_graph.mul %x, %neg
// CHECK:       %y0 = npu_graph.conv2d %r0, %w
// CHECK:       %p1 = npu_graph.mul %x, %pos
// CHECK:       %y1 = npu_graph.conv2d %r1, %w
// CHECK:       %p2 = npu_graph.mul %x, %pos
// CHECK:       %y2 = npu_graph.conv2d %r2, %wg
// SIM: check:       ok vs numpy float64 reference
