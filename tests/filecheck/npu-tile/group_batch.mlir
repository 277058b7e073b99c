// RUN: %opt %s --split-input-file -p npu-tile | filecheck %s

// Depthwise convolution (group = channels): output-channel tiles hold whole
// groups and read exactly their input channels; ci is one group's (1).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 2048, cores = 1>} {
  func.func @main(%x: tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<32x1x3x3xf32>
    %y = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, group = 32 : i64} : (tensor<1x32x8x8xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x8x8xf32> loc("dw")
    func.return %y : tensor<1x32x8x8xf32>
  }
}
// CHECK: npu_tile.kernel "dw"(%x, %w) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}, 1>

// -----

// Batched matmul whose B broadcasts over the outer batch dim: one loop per
// result batch dim (tile 1), then m, n, k; b1 runs outside b0, so B, moving with b1
// alone, stays put over b0's steps and is read once (`ordered`).
builtin.module {
  func.func @main(%a: tensor<2x3x4x5xf32>, %b: tensor<3x5x6xf32>) -> tensor<2x3x4x6xf32> {
    %y = npu_graph.matmul %a, %b : (tensor<2x3x4x5xf32>, tensor<3x5x6xf32>) -> tensor<2x3x4x6xf32> loc("bmm")
    func.return %y : tensor<2x3x4x6xf32>
  }
}
// CHECK: npu_tile.kernel "bmm"(%a, %b) matmul {loops = ["b1", "b0", "m", "n", "k"], tile = array<i64: 1, 1, 4, 6, 5>, grid = array<i64: 3, 2, 1, 1, 1>
