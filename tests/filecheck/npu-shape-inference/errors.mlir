// RUN: %opt %s --split-input-file -p 'npu-shape-inference{input-shapes="x=3x5"}' --verify-diagnostics -o /dev/null
// RUN: not npu-opt %s --split-input-file -p 'npu-shape-inference{input-shapes="x=3xq"}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not npu-opt %s --split-input-file -p 'npu-shape-inference{input-shapes="4x3"}' 2>&1 | filecheck %s --check-prefix=NONAME
// An op that cannot take its new operand shapes is an error naming the op and its
// ONNX node, at the op (the first RUN checks the expected-error annotations, as
// mlir-opt's --verify-diagnostics does); so are unknown input names (at no op) and
// malformed shapes.

// gemm: the new K no longer matches the weight.
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = npu_graph.constant {weight = "fc.weight"} : tensor<8x4xf32>
  // expected-error @+1 {{npu-shape-inference: cannot take operand shapes [3, 5], [8, 4]: inner dimensions differ (5 vs 8) at 'npu_graph.gemm' (ONNX node /fc/Gemm)}}
  %y = npu_graph.gemm %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32> loc("/fc/Gemm")
  func.return %y : tensor<2x4xf32>
}

// -----

// elementwise: the operands no longer broadcast.
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %b = npu_graph.constant {weight = "b"} : tensor<8xf32>
  // expected-error @+1 {{npu-shape-inference: cannot take operand shapes [3, 5], [8]: they do not broadcast at 'npu_graph.add' (ONNX node /bias/Add)}}
  %y = npu_graph.add %x, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("/bias/Add")
  func.return %y : tensor<2x8xf32>
}

// -----

// reshape: a fixed [4, 4] target cannot follow both input dims changing.
func.func @main(%x: tensor<2x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{npu-shape-inference: cannot take operand shapes [3, 5]: no result dim of [4, 4] holds input dim 0 of [2, 8] alone, so its new size 3 cannot be followed at 'npu_graph.reshape' (ONNX node /view/Reshape)}}
  %y = npu_graph.reshape %x : (tensor<2x8xf32>) -> tensor<4x4xf32> loc("/view/Reshape")
  func.return %y : tensor<4x4xf32>
}

// -----

// The function has no input called x.
// expected-error @unknown {{npu-shape-inference: input-shapes: @main has no input 'x' (inputs: input.1)}}
func.func @main(%y: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {npu.inputs = ["input.1"]} {
  func.return %y : tensor<2x8xf32>
}

// SYNTAX: error: npu-shape-inference: input-shapes: '3xq' (input 'x') is not a shape such as 4x3x224x224
// NONAME: error: npu-shape-inference: input-shapes: '4x3' is not NAME=DxDx...
