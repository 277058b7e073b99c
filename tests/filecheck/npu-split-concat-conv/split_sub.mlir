// RUN: %opt %s -p npu-split-concat-conv -o %t.mlir && filecheck %s < %t.mlir
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// split.mlir's dense layer with the elementwise chain c - X1 (the constant first): each
// part keeps the operand order, c[8:12] - f and c[0:8] - x. The run matches numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: tensor<1x8x4x4xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x12x4x4xf32>) attributes {npu.inputs = ["x"], npu.outputs = ["y", "x1"]} {
    %w1 = npu_graph.constant {value = dense<0.05> : tensor<4x8x3x3xf32>} : tensor<4x8x3x3xf32>
    %c = npu_graph.constant {value = dense<[[[0.1]], [[0.2]], [[0.3]], [[0.4]], [[0.5]], [[0.6]], [[0.7]], [[0.8]], [[-0.1]], [[-0.2]], [[-0.3]], [[-0.4]]]> : tensor<12x1x1xf32>} : tensor<12x1x1xf32>
    %w2 = npu_graph.constant {value = dense<0.25> : tensor<6x12x1x1xf32>} : tensor<6x12x1x1xf32>
    %b2 = npu_graph.constant {value = dense<0.5> : tensor<6xf32>} : tensor<6xf32>
    %r0 = npu_graph.relu %x : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> loc("relu0")
    %f = npu_graph.conv2d %r0, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x4x4xf32> loc("f")
    %x1 = npu_graph.concat %x, %f {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x12x4x4xf32> loc("cat")
    %a = npu_graph.sub %c, %x1 : (tensor<12x1x1xf32>, tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32> loc("bn")
    %r = npu_graph.relu %a : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32> loc("relu")
    %y = npu_graph.conv2d %r, %w2, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x12x4x4xf32>, tensor<6x12x1x1xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32> loc("conv")
    func.return %y, %x1 : tensor<1x6x4x4xf32>, tensor<1x12x4x4xf32>
  }
}
// CHECK:      %x1 = npu_graph.concat %x, %f
// CHECK:      %[[CB:.*]] = npu_graph.constant {{.*}} : tensor<4x1x1xf32>
// CHECK-NEXT: %{{.*}} = npu_graph.sub %[[CB]], %f : (tensor<4x1x1xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK:      %[[CA:.*]] = npu_graph.constant {{.*}} : tensor<8x1x1xf32>
// CHECK-NEXT: %{{.*}} = npu_graph.sub %[[CA]], %x : (tensor<8x1x1xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>

// SIM: check:       ok vs numpy float64 reference
