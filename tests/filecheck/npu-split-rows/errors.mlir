// RUN: %opt %s --split-input-file --verify-diagnostics -p npu-split-rows | filecheck %s
// The ops npu-split-rows creates check their operands.

func.func @f(%x: tensor<4x64xf32>) {
  %s = npu_graph.row_stats %x {kind = "median"} : (tensor<4x64xf32>) -> tensor<4x2xf32>
  func.return
}
// CHECK: 'npu_graph.row_stats': kind must be one of softmax, moments, got 'median'

// -----

func.func @f(%x: tensor<4x64xf32>) {
  %s = npu_graph.row_stats %x {kind = "moments"} : (tensor<4x64xf32>) -> tensor<4x2xf32>
  func.return
}
// CHECK: 'npu_graph.row_stats': row statistics gives shape [4, 3], but the result type has [4, 2]

// -----

func.func @f(%x: tensor<4x64xf32>, %s: tensor<4x3xf32>) {
  %y = npu_graph.softmax_apply %x, %s : (tensor<4x64xf32>, tensor<4x3xf32>) -> tensor<4x64xf32>
  func.return
}
// CHECK: 'npu_graph.softmax_apply': stats must be [4, 2], got [4, 3]

// -----

func.func @f(%x: tensor<4x64xf32>, %s: tensor<4x3xf32>, %g: tensor<32xf32>) {
  %y = npu_graph.layernorm_apply %x, %s, %g {epsilon = 1.0e-05 : f32} : (tensor<4x64xf32>, tensor<4x3xf32>, tensor<32xf32>) -> tensor<4x64xf32>
  func.return
}
// CHECK: 'npu_graph.layernorm_apply': scale and bias must be [64] or scalars, got [32]
