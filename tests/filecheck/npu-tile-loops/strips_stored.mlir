// RUN: %opt %s --split-input-file -p npu-tile-loops | filecheck %s

// A strip group that stores an inner value too (npu-layer-group's c1..r2 of a ResNet-
// style pair: %o_1 is read after the group by a residual add). The strip loop's first
// result is the last op's (the store writes it), the second %o_1's: each strip tees its
// rows [3s, 3s + 3) of %o_1 - here all the 3 rows the strip holds - before the store,
// the group region ends in a yield naming the values the results hold, and the kernel
// yields the loop's results in its own order.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>) {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<16x16x3x3xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<8x16x1x1xf32>
    %o, %c = npu_tile.kernel "c1..r2"(%x, %w1, %w2) group {loops = ["h"], tile = array<i64: 3>, grid = array<i64: 11>, sram_bytes = 29184 : i64, predicted_cycles = 7400 : i64, dram_bytes = 223744 : i64, plan = #npu_tile.strip<rows = 3, strips = 11, halo = [1, 1], sram = 29184>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>, tensor<8x16x1x1xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>) {
    ^bb0(%0: tensor<1x16x32x32xf32>, %1: tensor<16x16x3x3xf32>, %2: tensor<8x16x1x1xf32>):
      %a = npu_graph.conv2d %0, %1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      %o_1 = npu_graph.relu %a : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      %b = npu_graph.conv2d %o_1, %2 : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32>
      %c_1 = npu_graph.relu %b : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
      npu_tile.yield %o_1, %c_1 : tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>
    }
    func.return %o, %c : tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>
  }
}
// CHECK:      %[[L:.*]], %[[M:.*]] = npu_tile.strip_loop {rows = 3 : i64, strips = 11 : i64, {{.*}}} -> tensor<1x8x32x32xf32>, tensor<1x16x32x32xf32> {
// CHECK-NEXT: ^bb{{.*}}(%[[S:.*]]: index):
// CHECK-NEXT:   %[[XS:.*]] = npu_tile.load %{{.*}}(%[[S]])[0, 0, 3 * %[[S]] - 1, 0] sizes [1, 16, 5, 32] pad 0.0
// CHECK-NEXT:   %[[A:.*]] = npu_graph.conv2d %[[XS]]
// CHECK-NEXT:   %[[O:.*]] = npu_graph.relu %[[A]] : (tensor<1x16x3x32xf32>) -> tensor<1x16x3x32xf32>
// CHECK-NEXT:   %[[B:.*]] = npu_graph.conv2d %[[O]]
// CHECK-NEXT:   %[[C:.*]] = npu_graph.relu %[[B]]
// CHECK-NEXT:   npu_tile.tee %[[O]] into 1 (%[[S]])[0, 0, 3 * %[[S]], 0] sizes [1, 16, 3, 32] view [1, 16, 32, 32] : tensor<1x16x3x32xf32>
// CHECK-NEXT:   npu_tile.store %[[C]](%[[S]])[0, 0, 3 * %[[S]], 0] sizes [1, 8, 3, 32]
// CHECK-NEXT: } group {
// CHECK:        %[[GO:.*]] = npu_graph.relu %a
// CHECK:        %[[GC:.*]] = npu_graph.relu %b
// CHECK-NEXT:   npu_tile.yield %[[GC]], %[[GO]] : tensor<1x8x32x32xf32>, tensor<1x16x32x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: npu_tile.yield %[[M]], %[[L]] : tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>

// -----

// The stored value has a halo: %o holds rows [4s - 1, 4s + 5) for the 3x3 conv, and each
// strip tees the 4 rows [4s, 4s + 4) it owns, a slice from its second row.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 65536>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<16x16x1x1xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<16x16x3x3xf32>
    %o, %y = npu_tile.kernel "c1..c2"(%x, %w1, %w2) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 8>, plan = #npu_tile.strip<rows = 4, strips = 8, halo = [1, 1], sram = 43072>} : (tensor<1x16x32x32xf32>, tensor<16x16x1x1xf32>, tensor<16x16x3x3xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) {
    ^bb0(%0: tensor<1x16x32x32xf32>, %1: tensor<16x16x1x1xf32>, %2: tensor<16x16x3x3xf32>):
      %o_1 = npu_graph.conv2d %0, %1 : (tensor<1x16x32x32xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x32x32xf32>
      %y_1 = npu_graph.conv2d %o_1, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %o_1, %y_1 : tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>
    }
    func.return %o, %y : tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>
  }
}
// CHECK:      npu_tile.strip_loop {rows = 4 : i64, strips = 8 : i64
// CHECK:        %[[O:.*]] = npu_graph.conv2d %{{.*}} : (tensor<1x16x6x32xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x6x32xf32>
// CHECK:        %[[OWN:.*]] = npu_graph.slice %[[O]] {starts = array<i64: 0, 0, 1, 0>, ends = array<i64: 1, 16, 5, 32>
// CHECK-NEXT:   npu_tile.tee %[[OWN]] into 1 (%{{.*}})[0, 0, 4 * %{{.*}}, 0] sizes [1, 16, 4, 32] view [1, 16, 32, 32]
// CHECK-NEXT:   npu_tile.store
