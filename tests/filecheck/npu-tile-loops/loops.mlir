// RUN: %opt %s --split-input-file -p npu-tile-loops | filecheck %s

// gemm + bias + relu, K split in two: per tile the A and B slices, the gemm on
// tiles (its bias moves after the reduction), npu_tile.reduce, the bias slice
// (rank-extended to the output's rank), the epilogue and the output slice.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x32xf32>
    %b = npu_graph.constant {weight = "b"} : tensor<16xf32>
    %y = npu_tile.kernel "fc"(%x, %w, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 2, 1, 2>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 100 : i64} : (tensor<8x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x16xf32> {
    ^bb0(%a: tensor<8x32xf32>, %bw: tensor<16x32xf32>, %c: tensor<16xf32>):
      %g = npu_graph.gemm %a, %bw, %c {trans_b = true} : (tensor<8x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x16xf32>
      %r = npu_graph.relu %g : (tensor<8x16xf32>) -> tensor<8x16xf32>
      npu_tile.yield %r : tensor<8x16xf32>
    }
    func.return %y : tensor<8x16xf32>
  }
}
// CHECK:      npu_tile.kernel "fc"(%x, %w, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 2, 1, 2>
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<8x32xf32>, %[[BW:.*]]: tensor<16x32xf32>, %[[C:.*]]: tensor<16xf32>):
// CHECK-NEXT:   %[[Y:.*]] = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 2, 1, 2>, reductions = 1 : i64, double_buffer} -> tensor<8x16xf32> {
// CHECK-NEXT:   ^bb0(%m: index, %n: index, %k: index):
// CHECK-NEXT:     %[[AT:.*]] = npu_tile.load %[[A]](%m, %n, %k)[4 * %m, 16 * %k] sizes [4, 16] pad 0.0 : tensor<8x32xf32>
// CHECK-NEXT:     %[[BT:.*]] = npu_tile.load %[[BW]](%m, %n, %k)[16 * %n, 16 * %k] sizes [16, 16] pad 0.0 : tensor<16x32xf32>
// CHECK-NEXT:     %[[G:.*]] = npu_graph.gemm %[[AT]], %[[BT]] {trans_b = true} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:     %[[S:.*]] = npu_tile.reduce %[[G]] : tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT:     %[[CT:.*]] = npu_tile.load %[[C]](%m, %n, %k)[0, 16 * %n] sizes [1, 16] view [1, 16] : tensor<16xf32>
// CHECK-NEXT:     %[[ADD:.*]] = npu_graph.add %[[S]], %[[CT]] : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:     %[[R:.*]] = npu_graph.relu %[[ADD]] : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:     npu_tile.store %[[R]](%m, %n, %k)[4 * %m, 16 * %n] sizes [4, 16] : tensor<4x16xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   npu_tile.yield %[[Y]] : tensor<8x16xf32>

// -----

// A 3x3 conv tiled by rows: the input slice carries its halo at offset -1 (the
// load pads outside the tensor), the conv on tiles is unpadded, C_in is the
// reduction loop.
builtin.module {
  func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<4x4x3x3xf32>
    %y = npu_tile.kernel "conv"(%x, %w) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 4, 4, 8, 2>, grid = array<i64: 1, 1, 2, 1, 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%a: tensor<1x4x8x8xf32>, %b: tensor<4x4x3x3xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %c : tensor<1x4x8x8xf32>
    }
    func.return %y : tensor<1x4x8x8xf32>
  }
}
// CHECK:      npu_tile.loop {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 4, 4, 8, 2>, grid = array<i64: 1, 1, 2, 1, 2>, reductions = 1 : i64} -> tensor<1x4x8x8xf32> {
// CHECK-NEXT: ^bb0(%n: index, %co: index, %oh: index, %ow: index, %ci: index):
// CHECK-NEXT:   %[[XT:.*]] = npu_tile.load %a(%n, %co, %oh, %ow, %ci)[%n, 2 * %ci, 4 * %oh - 1, 8 * %ow - 1] sizes [1, 2, 6, 10] pad 0.0 : tensor<1x4x8x8xf32>
// CHECK-NEXT:   %[[WT:.*]] = npu_tile.load %b(%n, %co, %oh, %ow, %ci)[4 * %co, 2 * %ci, 0, 0] sizes [4, 2, 3, 3] pad 0.0 : tensor<4x4x3x3xf32>
// CHECK-NEXT:   %[[CT:.*]] = npu_graph.conv2d %[[XT]], %[[WT]] {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x6x10xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT:   %[[S:.*]] = npu_tile.reduce %[[CT]]
// CHECK-NEXT:   npu_tile.store %[[S]](%n, %co, %oh, %ow, %ci)[%n, 4 * %co, 4 * %oh, 8 * %ow] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>

// -----

// An elementwise kernel with a broadcast operand: the row vector's slice stays
// at row 0 (size 1) whatever the row tile.
builtin.module {
  func.func @main(%x: tensor<8x64xf32>, %r: tensor<64xf32>) -> tensor<8x64xf32> {
    %y = npu_tile.kernel "add"(%x, %r) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 64>, grid = array<i64: 2, 1>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>, %b: tensor<64xf32>):
      %s = npu_graph.add %a, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
      %t = npu_graph.tanh %s : (tensor<8x64xf32>) -> tensor<8x64xf32>
      npu_tile.yield %t : tensor<8x64xf32>
    }
    func.return %y : tensor<8x64xf32>
  }
}
// CHECK:      npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 64>, grid = array<i64: 2, 1>, reductions = 0 : i64, double_buffer} -> tensor<8x64xf32> {
// CHECK-NEXT: ^bb0(%d0: index, %d1: index):
// CHECK-NEXT:   %[[XT:.*]] = npu_tile.load %a(%d0, %d1)[4 * %d0, 64 * %d1] sizes [4, 64] : tensor<8x64xf32>
// CHECK-NEXT:   %[[RT:.*]] = npu_tile.load %b(%d0, %d1)[0, 64 * %d1] sizes [1, 64] view [1, 64] : tensor<64xf32>
// CHECK-NEXT:   %[[S:.*]] = npu_graph.add %[[XT]], %[[RT]] : (tensor<4x64xf32>, tensor<1x64xf32>) -> tensor<4x64xf32>
// CHECK-NEXT:   %[[T:.*]] = npu_tile.reduce %[[S]] : tensor<4x64xf32> -> tensor<4x64xf32>
// CHECK-NEXT:   %[[U:.*]] = npu_graph.tanh %[[T]]
// CHECK-NEXT:   npu_tile.store %[[U]](%d0, %d1)[4 * %d0, 64 * %d1] sizes [4, 64] : tensor<4x64xf32>
