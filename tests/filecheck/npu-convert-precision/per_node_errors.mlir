// RUN: not npu-opt %s -p 'npu-convert-precision{type=f32}' 2>&1 | filecheck %s

// A per-node type that is not a float type is an error naming the node (int8 is what
// a quantized model computes in: its QuantizeLinear/DequantizeLinear say so).
// CHECK: npu-convert-precision: npu.precision: node 'conv1': type must be one of f16, bf16, f32, got 'int8'
builtin.module attributes {npu.precision = {"conv1" = "int8"}} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32> loc("conv1")
    func.return %y : tensor<4xf32>
  }
}
