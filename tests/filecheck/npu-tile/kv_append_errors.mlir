// RUN: %opt %s -p npu-tile --verify-diagnostics -o /dev/null

// A kv-append kernel (written by hand: npu-fuse forms it only along the keys) whose
// concats join along the heads: npu-tile names the kernel and what is wrong.
builtin.module {
  func.func @main(%q: tensor<2x4x1x8xf32>, %pk: tensor<2x3x16x8xf32>, %nk: tensor<2x1x16x8xf32>, %pv: tensor<2x3x16x8xf32>, %nv: tensor<2x1x16x8xf32>) -> tensor<2x4x1x8xf32> {
    // expected-error @+1 {{npu-tile: kernel 'attn': 'npu_graph.concat' must join along the attention's keys (axis 2)}}
    %o, %k, %v = npu_graph.fused(%pk, %nk, %pv, %nv, %q) {kernel = "attn", rule = "kv-append"} : (tensor<2x3x16x8xf32>, tensor<2x1x16x8xf32>, tensor<2x3x16x8xf32>, tensor<2x1x16x8xf32>, tensor<2x4x1x8xf32>) -> (tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
    ^bb0(%a: tensor<2x3x16x8xf32>, %b: tensor<2x1x16x8xf32>, %c: tensor<2x3x16x8xf32>, %d: tensor<2x1x16x8xf32>, %e: tensor<2x4x1x8xf32>):
      %kk = npu_graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3x16x8xf32>, tensor<2x1x16x8xf32>) -> tensor<2x4x16x8xf32>
      %vv = npu_graph.concat %c, %d {axis = 1 : i64} : (tensor<2x3x16x8xf32>, tensor<2x1x16x8xf32>) -> tensor<2x4x16x8xf32>
      %oo = npu_graph.attention %e, %kk, %vv {scale = 0.353553 : f32, key_rows} : (tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x1x8xf32>
      npu_graph.yield %oo, %kk, %vv : tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
    }
    func.return %o : tensor<2x4x1x8xf32>
  }
}
