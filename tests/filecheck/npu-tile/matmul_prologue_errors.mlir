// RUN: %opt %s -p npu-tile --verify-diagnostics -o /dev/null

// A matmul-prologue kernel (written by hand: npu-fuse forms it only for untransposed
// readers) whose gemm reads the normalised tensor transposed: its A tiles would hold
// pieces of columns, not of rows, so npu-tile names the kernel and what is wrong.
builtin.module {
  func.func @main(%x: tensor<64x16xf32>, %st: tensor<64x3xf32>, %g: tensor<16xf32>, %w: tensor<64x8xf32>) -> tensor<16x8xf32> {
    // expected-error @+1 {{npu-tile: kernel 'proj': a matmul prologue needs an untransposed A of the result's rank}}
    %y = npu_graph.fused(%x, %st, %g, %w) {kernel = "proj", rule = "matmul-prologue"} : (tensor<64x16xf32>, tensor<64x3xf32>, tensor<16xf32>, tensor<64x8xf32>) -> tensor<16x8xf32> {
    ^bb0(%a: tensor<64x16xf32>, %s: tensor<64x3xf32>, %c: tensor<16xf32>, %b: tensor<64x8xf32>):
      %n = npu_graph.layernorm_apply %a, %s, %c {epsilon = 1.0e-05 : f32} : (tensor<64x16xf32>, tensor<64x3xf32>, tensor<16xf32>) -> tensor<64x16xf32>
      %p = npu_graph.gemm %n, %b {trans_a = true} : (tensor<64x16xf32>, tensor<64x8xf32>) -> tensor<16x8xf32>
      npu_graph.yield %p : tensor<16x8xf32>
    }
    func.return %y : tensor<16x8xf32>
  }
}
