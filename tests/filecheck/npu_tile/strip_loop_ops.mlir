// RUN: %roundtrip
// npu_tile.strip_loop (a strip group's loop over strips: body and whole-tensor group
// region) and npu_tile.line_buffer print and parse back.

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = npu_tile.kernel "k"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %r = npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} -> tensor<1x4x8x8xf32> {
    ^bb1(%s: index):
      %t = npu_tile.load %a(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] pad 0.0 : tensor<1x4x8x8xf32>
      %n = npu_tile.line_buffer %t : tensor<1x4x4x8xf32> -> tensor<1x4x6x8xf32>
      %c = npu_graph.slice %n {starts = array<i64: 0, 0, 2, 0>, ends = array<i64: 1, 4, 6, 8>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x4x8xf32>
      %u = npu_graph.relu %c : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      npu_tile.store %u(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>
    } group {
      %g = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    }
    npu_tile.yield %r : tensor<1x4x8x8xf32>
  }
  func.return %0 : tensor<1x4x8x8xf32>
}
// CHECK: npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} -> tensor<1x4x8x8xf32> {
// CHECK: npu_tile.line_buffer %{{.*}} : tensor<1x4x4x8xf32> -> tensor<1x4x6x8xf32>
// CHECK: } group {
// CHECK-NEXT: npu_graph.relu
