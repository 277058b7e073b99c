// RUN: %opt %s --split-input-file -p npu-tile | filecheck %s
// RUN: %opt %s -p npu-tile,npu-tile-loops | filecheck %s --check-prefix=LOOPS

// A per-channel lookup table in a conv's epilogue: tiles of 4 output channels (SRAM
// for no more) load their 4 rows of the [16, 256] table with the tile.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 12288>} {
  func.func @main(%x: tensor<1x8x12x12xi8>) -> tensor<1x16x12x12xi8> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xi8>
    %m = npu_graph.constant {value = dense<0.01> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %lut = npu_graph.constant {weight = "lut"} : tensor<16x256xi8>
    %y = npu_graph.fused(%x, %w, %m, %z, %lut) {kernel = "conv", rule = "conv-epilogue"} : (tensor<1x8x12x12xi8>, tensor<16x8x3x3xi8>, tensor<f32>, tensor<f32>, tensor<16x256xi8>) -> tensor<1x16x12x12xi8> {
    ^bb0(%a: tensor<1x8x12x12xi8>, %b: tensor<16x8x3x3xi8>, %c: tensor<f32>, %d: tensor<f32>, %e: tensor<16x256xi8>):
      %acc = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x12x12xi8>, tensor<16x8x3x3xi8>) -> tensor<1x16x12x12xi32>
      %r = npu_graph.requantize %acc, %c, %d : (tensor<1x16x12x12xi32>, tensor<f32>, tensor<f32>) -> tensor<1x16x12x12xi8>
      %t = npu_graph.table %r, %e {axis = 1 : i64} : (tensor<1x16x12x12xi8>, tensor<16x256xi8>) -> tensor<1x16x12x12xi8>
      npu_graph.yield %t : tensor<1x16x12x12xi8>
    }
    func.return %y : tensor<1x16x12x12xi8>
  }
}
// CHECK:      npu_tile.kernel "conv"(%x, %w, %m, %z, %lut) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 4, 12, 12, 8>
// CHECK:        npu_graph.requantize
// CHECK-NEXT:   npu_graph.table %r, %4 {axis = 1 : i64}
// LOOPS: npu_tile.load %4(%n, %co, %oh, %ow, %ci)[4 * %co, 0] sizes [4, 256] : tensor<16x256xi8>
