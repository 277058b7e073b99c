// RUN: %opt %s --split-input-file -p npu-tile-loops | filecheck %s

// A max-pool tiled by rows: the input slice pads with -inf and the pool on tiles
// is unpadded.
builtin.module {
  func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
    %y = npu_tile.kernel "pool"(%x) pool {loops = ["n", "c", "oh", "ow"], tile = array<i64: 1, 4, 2, 4>, grid = array<i64: 1, 1, 2, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
    ^bb0(%a: tensor<1x4x8x8xf32>):
      %p = npu_graph.maxpool %a {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
      npu_tile.yield %p : tensor<1x4x4x4xf32>
    }
    func.return %y : tensor<1x4x4x4xf32>
  }
}
// CHECK:      ^bb0(%n: index, %c: index, %oh: index, %ow: index):
// CHECK-NEXT:   %[[XT:.*]] = npu_tile.load %a(%n, %c, %oh, %ow)[%n, 4 * %c, 4 * %oh - 1, 8 * %ow - 1] sizes [1, 4, 5, 9] pad -inf : tensor<1x4x8x8xf32>
// CHECK-NEXT:   %[[P:.*]] = npu_graph.maxpool %[[XT]] {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x5x9xf32>) -> tensor<1x4x2x4xf32>
// CHECK-NEXT:   %[[S:.*]] = npu_tile.reduce %[[P]]
// CHECK-NEXT:   npu_tile.store %[[S]](%n, %c, %oh, %ow)[%n, 4 * %c, 2 * %oh, 4 * %ow] sizes [1, 4, 2, 4]

// -----

// A structured op (softmax over the last axis): rows are tiled, the axis is whole.
builtin.module {
  func.func @main(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
    %y = npu_tile.kernel "sm"(%x) apply {loops = ["d0", "d1"], tile = array<i64: 2, 32>, grid = array<i64: 4, 1>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32> {
    ^bb0(%a: tensor<8x32xf32>):
      %s = npu_graph.softmax %a {axis = -1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32>
      npu_tile.yield %s : tensor<8x32xf32>
    }
    func.return %y : tensor<8x32xf32>
  }
}
// CHECK:      %[[XT:.*]] = npu_tile.load %a(%d0, %d1)[2 * %d0, 0] sizes [2, 32] pad 0.0 : tensor<8x32xf32>
// CHECK-NEXT: %[[S:.*]] = npu_graph.softmax %[[XT]] {axis = -1 : i64} : (tensor<2x32xf32>) -> tensor<2x32xf32>
// CHECK-NEXT: npu_tile.reduce %[[S]]
// CHECK-NEXT: npu_tile.store {{.*}}[2 * %d0, 32 * %d1] sizes [2, 32] : tensor<2x32xf32>

// -----

// A conv prologue (BN as mul/add, then ReLU) runs on the input tile before the
// conv; its per-channel operands follow the input tile's channels.
builtin.module {
  func.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
    %s = npu_graph.constant {weight = "s"} : tensor<16x1x1xf32>
    %t = npu_graph.constant {weight = "t"} : tensor<16x1x1xf32>
    %w = npu_graph.constant {weight = "w"} : tensor<16x16x1x1xf32>
    %y = npu_tile.kernel "bn_conv"(%x, %s, %t, %w) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 16, 4, 8, 8>, grid = array<i64: 1, 1, 2, 1, 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32> {
    ^bb0(%a: tensor<1x16x8x8xf32>, %sa: tensor<16x1x1xf32>, %ta: tensor<16x1x1xf32>, %wa: tensor<16x16x1x1xf32>):
      %m = npu_graph.mul %a, %sa : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
      %p = npu_graph.add %m, %ta : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
      %r = npu_graph.relu %p : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
      %c = npu_graph.conv2d %r, %wa : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32>
      npu_tile.yield %c : tensor<1x16x8x8xf32>
    }
    func.return %y : tensor<1x16x8x8xf32>
  }
}
// CHECK:      %[[XT:.*]] = npu_tile.load %a({{.*}})[%n, 8 * %ci, 4 * %oh, 8 * %ow] sizes [1, 8, 4, 8] pad 0.0
// CHECK-NEXT: %[[WT:.*]] = npu_tile.load %wa({{.*}})[16 * %co, 8 * %ci, 0, 0] sizes [16, 8, 1, 1] pad 0.0
// CHECK-NEXT: %[[ST:.*]] = npu_tile.load %sa({{.*}})[0, 8 * %ci, 0, 0] sizes [1, 8, 1, 1] view [1, 16, 1, 1]
// CHECK-NEXT: %[[TT:.*]] = npu_tile.load %ta({{.*}})[0, 8 * %ci, 0, 0] sizes [1, 8, 1, 1] view [1, 16, 1, 1]
// CHECK-NEXT: %[[M:.*]] = npu_graph.mul %[[XT]], %[[ST]]
// CHECK-NEXT: %[[P:.*]] = npu_graph.add %[[M]], %[[TT]]
// CHECK-NEXT: %[[R:.*]] = npu_graph.relu %[[P]]
// CHECK-NEXT: %[[C:.*]] = npu_graph.conv2d %[[R]], %[[WT]]
// CHECK-NEXT: npu_tile.reduce %[[C]]
