// RUN: not npu-opt %s -p 'npu-convert-precision{type=i8}' 2>&1 | filecheck %s
// RUN: not npu-opt %s -p 'npu-default{precision=fp16}' 2>&1 | filecheck %s --check-prefix=DEFAULT

// Only the float types: int8 is what a quantized model (npu-fuse-qdq) computes in.
// CHECK: npu-convert-precision: type must be one of f16, bf16, f32, got 'i8'
// DEFAULT: npu-default: precision must be one of f32, f16, bf16, got 'fp16'
builtin.module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}
