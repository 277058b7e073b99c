// RUN: npu-run %s --check 2>&1 | filecheck %s
// RUN: npu-run %s --check -p 'npu-default{disable=npu-hoist-pool}' 2>&1 | filecheck %s
// npu-hoist-pool is exact: the model with the pool hoisted (npu-default) and without it
// both match the float64 reference, on a bias, ReLU and clip over a padded 3x3 stride-2 pool.
builtin.module {
  func.func @main(%x: tensor<2x3x9x9xf32>) -> tensor<2x4x5x5xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<[[[[0.5]], [[-1.0]], [[0.25]]], [[[1.0]], [[0.5]], [[-0.5]]], [[[-0.25]], [[1.0]], [[1.0]]], [[[0.75]], [[-0.75]], [[0.5]]]]> : tensor<4x3x1x1xf32>} : tensor<4x3x1x1xf32>
    %b = npu_graph.constant {value = dense<[0.5, -0.25, -2.0, 1.0]> : tensor<4xf32>} : tensor<4xf32>
    %lo = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %hi = npu_graph.constant {value = dense<1.5> : tensor<f32>} : tensor<f32>
    %c = npu_graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>} : (tensor<2x3x9x9xf32>, tensor<4x3x1x1xf32>, tensor<4xf32>) -> tensor<2x4x9x9xf32>
    %r = npu_graph.relu %c : (tensor<2x4x9x9xf32>) -> tensor<2x4x9x9xf32>
    %k = npu_graph.clip %r, %lo, %hi : (tensor<2x4x9x9xf32>, tensor<f32>, tensor<f32>) -> tensor<2x4x9x9xf32>
    %y = npu_graph.maxpool %k {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x9x9xf32>) -> tensor<2x4x5x5xf32>
    func.return %y : tensor<2x4x5x5xf32>
  }
}
// CHECK: check:       ok vs numpy float64 reference
