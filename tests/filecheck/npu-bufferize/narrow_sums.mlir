// RUN: %opt %s --split-input-file -p npu-bufferize --remarks -o /dev/null 2>&1 | filecheck %s
// The accumulation guard (issue 45): a matmul whose K loop runs in two steps, its tile
// loop written (as npu-tile-loops never writes it) with an f16 running sum: each step
// adds into an f16 buffer, so the sum rounds at every step - a remark names it.
// CHECK: remark: npu-bufferize: missed: [{{.*}}] a sum is held in f16 between reduction steps ('npu_compute.matmul' adds into a buffer of f16, rounding at every step; f32 would not)
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf16>, %w: tensor<16x32xf16>, %b: tensor<16xf16>) -> tensor<4x16xf16> {
    %y = npu_tile.kernel "fc"(%x, %w, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 1, 1, 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 100 : i64} : (tensor<4x32xf16>, tensor<16x32xf16>, tensor<16xf16>) -> tensor<4x16xf16> {
    ^bb0(%a: tensor<4x32xf16>, %bw: tensor<16x32xf16>, %c: tensor<16xf16>):
      %0 = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 1, 1, 2>, reductions = 1 : i64} -> tensor<4x16xf16> {
      ^bb0(%m: index, %n: index, %k: index):
        %1 = npu_tile.load %a(%m, %n, %k)[4 * %m, 16 * %k] sizes [4, 16] pad 0.0 : tensor<4x32xf16>
        %2 = npu_tile.load %bw(%m, %n, %k)[16 * %n, 16 * %k] sizes [16, 16] pad 0.0 : tensor<16x32xf16>
        %3 = npu_graph.gemm %1, %2 {trans_b = true} : (tensor<4x16xf16>, tensor<16x16xf16>) -> tensor<4x16xf16>
        %4 = npu_tile.reduce %3 : tensor<4x16xf16> -> tensor<4x16xf16>
        %5 = npu_tile.load %c(%m, %n, %k)[0, 16 * %n] sizes [1, 16] view [1, 16] : tensor<16xf16>
        %6 = npu_graph.add %4, %5 : (tensor<4x16xf16>, tensor<1x16xf16>) -> tensor<4x16xf16>
        npu_tile.store %6(%m, %n, %k)[4 * %m, 16 * %n] sizes [4, 16] : tensor<4x16xf16>
      }
      npu_tile.yield %0 : tensor<4x16xf16>
    }
    func.return %y : tensor<4x16xf16>
  }
}


// -----

// Must not fire: the same loop with an f32 running sum.
// CHECK-NOT: a sum is held
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
    %y = npu_tile.kernel "fc"(%x, %w, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 1, 1, 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 100 : i64} : (tensor<4x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x32xf32>, %bw: tensor<16x32xf32>, %c: tensor<16xf32>):
      %0 = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 1, 1, 2>, reductions = 1 : i64} -> tensor<4x16xf32> {
      ^bb0(%m: index, %n: index, %k: index):
        %1 = npu_tile.load %a(%m, %n, %k)[4 * %m, 16 * %k] sizes [4, 16] pad 0.0 : tensor<4x32xf32>
        %2 = npu_tile.load %bw(%m, %n, %k)[16 * %n, 16 * %k] sizes [16, 16] pad 0.0 : tensor<16x32xf32>
        %3 = npu_graph.gemm %1, %2 {trans_b = true} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
        %4 = npu_tile.reduce %3 : tensor<4x16xf32> -> tensor<4x16xf32>
        %5 = npu_tile.load %c(%m, %n, %k)[0, 16 * %n] sizes [1, 16] view [1, 16] : tensor<16xf32>
        %6 = npu_graph.add %4, %5 : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
        npu_tile.store %6(%m, %n, %k)[4 * %m, 16 * %n] sizes [4, 16] : tensor<4x16xf32>
      }
      npu_tile.yield %0 : tensor<4x16xf32>
    }
    func.return %y : tensor<4x16xf32>
  }
}

