// RUN: %opt %s --split-input-file -p npu-hoist-pool | filecheck %s
// RUN: npu-opt %s --print-debuginfo --split-input-file -p npu-hoist-pool | filecheck %s --check-prefix=LOC
// npu-hoist-pool: maxpool(relu(conv2d(x, W, b))) -> relu(add(maxpool(conv2d(x, W)), b as
// [C, 1, 1])): the bias and the ReLU run on a quarter of the elements. (Numerics:
// run.mlir, tests/test_hoist_pool.py.)

// LeNet's conv-ReLU-pool: the pool moves above the ReLU, then above the bias.
builtin.module {
  func.func @main(%x: tensor<2x1x8x8xf32>) -> tensor<2x3x4x4xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<[[[[0.5, -1.0], [1.0, 0.25]]], [[[-0.5, 1.0], [0.75, -1.0]]], [[[1.0, 1.0], [-1.0, 0.5]]]]> : tensor<3x1x2x2xf32>} : tensor<3x1x2x2xf32>
    %b = npu_graph.constant {value = dense<[0.5, -0.25, -2.0]> : tensor<3xf32>} : tensor<3xf32>
    %c = npu_graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>} : (tensor<2x1x8x8xf32>, tensor<3x1x2x2xf32>, tensor<3xf32>) -> tensor<2x3x8x8xf32> loc("/conv/Conv")
    %r = npu_graph.relu %c : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32> loc("/relu/Relu")
    %y = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32> loc("/pool/MaxPool")
    func.return %y : tensor<2x3x4x4xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %w = npu_graph.constant
// CHECK-NEXT:    %[[B:.*]] = npu_graph.constant {value = dense<{{\[}}{{\[}}[5.000000e-01]], {{\[}}[-2.500000e-01]], {{\[}}[-2.000000e+00]]]> : tensor<3x1x1xf32>}
// CHECK-NEXT:    %c = npu_graph.conv2d %x, %w {{.*}} : (tensor<2x1x8x8xf32>, tensor<3x1x2x2xf32>) -> tensor<2x3x8x8xf32>
// CHECK-NEXT:    %[[P:.*]] = npu_graph.maxpool %c {{.*}} -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    %[[A:.*]] = npu_graph.add %[[P]], %[[B]] : (tensor<2x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    %y = npu_graph.relu %[[A]] : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
// CHECK-NEXT:    func.return %y
// Each op keeps its ONNX node: the pool the pool's, the bias add the conv's.
// LOC:      npu_graph.conv2d {{.*}} loc("/conv/Conv")
// LOC-NEXT: npu_graph.maxpool {{.*}} loc("/pool/MaxPool")
// LOC:      npu_graph.add {{.*}} loc("/conv/Conv")
// LOC-NEXT: npu_graph.relu {{.*}} loc("/relu/Relu")

// -----

// A chain: per-channel add, ReLU, clip (bounds over the window), max with a per-channel
// tensor, then a 3x3 stride-2 pool with padding: every op moves, in order.
builtin.module {
  func.func @main(%x: tensor<1x2x7x7xf32>, %m: tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32> attributes {npu.inputs = ["x", "m"], npu.outputs = ["y"]} {
    %o = npu_graph.constant {value = dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %lo = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %hi = npu_graph.constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
    %a = npu_graph.add %o, %x : (tensor<2x1x1xf32>, tensor<1x2x7x7xf32>) -> tensor<1x2x7x7xf32>
    %r = npu_graph.relu %a : (tensor<1x2x7x7xf32>) -> tensor<1x2x7x7xf32>
    %c = npu_graph.clip %r, %lo, %hi : (tensor<1x2x7x7xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x7x7xf32>
    %n = npu_graph.max %c, %m : (tensor<1x2x7x7xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x7x7xf32>
    %y = npu_graph.maxpool %n {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
    func.return %y : tensor<1x2x4x4xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:         %hi = npu_graph.constant
// CHECK-NEXT:    %[[P:.*]] = npu_graph.maxpool %x {{.*}} : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[A:.*]] = npu_graph.add %o, %[[P]] : (tensor<2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[R:.*]] = npu_graph.relu %[[A]] : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[C:.*]] = npu_graph.clip %[[R]], %lo, %hi : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %y = npu_graph.max %[[C]], %m : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    func.return %y

// -----

// `bias=false`: the ReLU moves, the conv keeps its bias.
builtin.module {
  func.func @main(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<2.0> : tensor<1x1x1x1xf32>} : tensor<1x1x1x1xf32>
    %b = npu_graph.constant {value = dense<-1.0> : tensor<1xf32>} : tensor<1xf32>
    %c = npu_graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x4x4xf32>
    %r = npu_graph.relu %c : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
    %y = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
    func.return %y : tensor<1x1x2x2xf32>
  }
}
// RUN: %opt %s --split-input-file -p 'npu-hoist-pool{bias=false}' | filecheck %s --check-prefix=NOBIAS
// NOBIAS-LABEL: func.func @main
// NOBIAS:       npu_graph.conv2d %x, %w, %b
// NOBIAS-LABEL: func.func @main
// NOBIAS-LABEL: func.func @main
// NOBIAS:         %c = npu_graph.conv2d %x, %w, %b {{.*}} -> tensor<1x1x4x4xf32>
// NOBIAS-NEXT:    %[[P:.*]] = npu_graph.maxpool %c {{.*}} -> tensor<1x1x2x2xf32>
// NOBIAS-NEXT:    %y = npu_graph.relu %[[P]] : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
// NOBIAS-NEXT:    func.return %y
