// RUN: not npu-opt %s -p npu-split-concat-conv 2>&1 | filecheck %s

// The conv's weights are in a weight file that is not there: the pass reading them
// (to slice them) says which file and fails, naming itself.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>, npu.weights = "no-such-weights.npz"} {
  func.func @main(%x: tensor<1x8x4x4xf32>) -> tensor<1x6x4x4xf32> {
    %w1 = npu_graph.constant {value = dense<0.05> : tensor<4x8x1x1xf32>} : tensor<4x8x1x1xf32>
    %w = npu_graph.constant {weight = "conv.w"} : tensor<6x12x1x1xf32>
    %f = npu_graph.conv2d %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x4x4xf32>
    %x1 = npu_graph.concat %x, %f {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x12x4x4xf32>
    %r = npu_graph.relu %x1 : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32>
    %y = npu_graph.conv2d %r, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x12x4x4xf32>, tensor<6x12x1x1xf32>) -> tensor<1x6x4x4xf32>
    func.return %y : tensor<1x6x4x4xf32>
  }
}
// CHECK: error: npu-split-concat-conv: cannot read weight file '{{.*}}no-such-weights.npz' (module attribute npu.weights)
