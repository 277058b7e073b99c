// RUN: %opt %s -p npu-tile --verify-diagnostics -o /dev/null


// A LayerNorm in a cube op's epilogue: the matmul's tiles split its columns.
builtin.module {
  func.func @main(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<8x8xf32>
    // expected-error @+1 {{npu-tile: kernel 'mm_ln': 'npu_graph.layernorm' in an epilogue needs an elementwise anchor of its input's shape}}
    %y = npu_graph.fused(%x, %w, %g) {kernel = "mm_ln", rule = "matmul-epilogue"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>, %s: tensor<8xf32>):
      %m = npu_graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %ln = npu_graph.layernorm %m, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      npu_graph.yield %ln : tensor<4x8xf32>
    }
    func.return %y : tensor<4x8xf32>
  }
}
