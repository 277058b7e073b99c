// RUN: %roundtrip
// npu_tile.loop, npu_tile.load, npu_tile.reduce and npu_tile.store print and
// parse back: window offsets are affine in the tile indices, `view` only when the
// window reads a rank-extended view, `pad` only when it may read outside.

builtin.module {
  func.func @main(%x: tensor<8x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
    %y = npu_tile.kernel "fc"(%x, %w, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 2, 1, 2>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 1 : i64} : (tensor<8x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x16xf32> {
    ^bb0(%a: tensor<8x32xf32>, %bw: tensor<16x32xf32>, %c: tensor<16xf32>):
      %r = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 2, 1, 2>, reductions = 1 : i64, double_buffer} -> tensor<8x16xf32> {
      ^bb1(%m: index, %n: index, %k: index):
        %at = npu_tile.load %a(%m, %n, %k)[4 * %m, 16 * %k - 2 + %n] sizes [4, 16] pad -1.5 : tensor<8x32xf32>
        %bt = npu_tile.load %bw(%m, %n, %k)[16 * %n, 16 * %k] sizes [16, 16] : tensor<16x32xf32>
        %g = npu_graph.gemm %at, %bt {trans_b = true} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
        %s = npu_tile.reduce %g : tensor<4x16xf32> -> tensor<4x16xf32>
        %ct = npu_tile.load %c(%m, %n, %k)[0, 16 * %n] sizes [1, 16] view [1, 16] : tensor<16xf32>
        %q = npu_graph.add %s, %ct : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
        npu_tile.store %q(%m, %n, %k)[4 * %m, 16 * %n] sizes [4, 16] : tensor<4x16xf32>
      }
      npu_tile.yield %r : tensor<8x16xf32>
    }
    func.return %y : tensor<8x16xf32>
  }
}
// CHECK:      %{{.*}} = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 2, 1, 2>, reductions = 1 : i64, double_buffer} -> tensor<8x16xf32> {
// CHECK-NEXT: ^{{.*}}(%m: index, %n: index, %k: index):
// CHECK-NEXT:   %at = npu_tile.load %a(%m, %n, %k)[4 * %m, %n + 16 * %k - 2] sizes [4, 16] pad -1.5 : tensor<8x32xf32>
// CHECK-NEXT:   %bt = npu_tile.load %bw(%m, %n, %k)[16 * %n, 16 * %k] sizes [16, 16] : tensor<16x32xf32>
// CHECK-NEXT:   %g = npu_graph.gemm %at, %bt {trans_b = true}
// CHECK-NEXT:   %s = npu_tile.reduce %g : tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT:   %ct = npu_tile.load %c(%m, %n, %k)[0, 16 * %n] sizes [1, 16] view [1, 16] : tensor<16xf32>
// CHECK-NEXT:   %q = npu_graph.add %s, %ct
// CHECK-NEXT:   npu_tile.store %q(%m, %n, %k)[4 * %m, 16 * %n] sizes [4, 16] : tensor<4x16xf32>
// CHECK-NEXT: }

// -----

// npu_tile.tee writes a tile every step to a loop result after the first (here 1),
// through its `view` (always printed: the tee names its result by index).
builtin.module {
  func.func @tee(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    %y, %z = npu_tile.kernel "t"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 16>, grid = array<i64: 2, 1>} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    ^bb0(%a: tensor<8x16xf32>):
      %r, %r2 = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 16>, grid = array<i64: 2, 1>, reductions = 0 : i64} -> tensor<8x16xf32>, tensor<8x16xf32> {
      ^bb1(%i: index, %j: index):
        %t = npu_tile.load %a(%i, %j)[4 * %i, 16 * %j] sizes [4, 16] : tensor<8x16xf32>
        npu_tile.tee %t into 1 (%i, %j)[4 * %i, 16 * %j] sizes [4, 16] view [8, 16] : tensor<4x16xf32>
        %s = npu_tile.reduce %t : tensor<4x16xf32> -> tensor<4x16xf32>
        npu_tile.store %s(%i, %j)[4 * %i, 16 * %j] sizes [4, 16] : tensor<4x16xf32>
      }
      npu_tile.yield %r, %r2 : tensor<8x16xf32>, tensor<8x16xf32>
    }
    func.return %y, %z : tensor<8x16xf32>, tensor<8x16xf32>
  }
}
// CHECK:      %{{.*}}, %{{.*}} = npu_tile.loop {{.*}} -> tensor<8x16xf32>, tensor<8x16xf32> {
// CHECK:        npu_tile.tee %t into 1 (%i, %j)[4 * %i, 16 * %j] sizes [4, 16] view [8, 16] : tensor<4x16xf32>
