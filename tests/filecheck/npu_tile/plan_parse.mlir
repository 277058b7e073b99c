// RUN: %opt %s --split-input-file --parsing-diagnostics | filecheck %s
// Malformed #npu_tile.strip and #npu_tile.group plans are parse errors.

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [1, 1], sram = 64, rolling>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: #npu_tile.strip: unknown key 'rolling' (expected rows, strips, sram, warm, in_place, halo, stored_in_place, prefetch, line_buffer)

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 2, strips = 4, sram = 64>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: #npu_tile.strip: missing halo

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [1, 1], sram = 64, stored_in_place = [-2]>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: #npu_tile.strip: stored_in_place lists operand indices (-1: none)

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 0, strips = 4, halo = [1, 1], sram = 64>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: #npu_tile.strip: rows and strips must be positive, sram and warm not negative (rows = 0, strips = 4, sram = 64, warm = 0)

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [1], sram = 64>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: #npu_tile.strip: halo is [above, below], got [1]

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [1, 1], sram = 64, warm = 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: #npu_tile.strip: warm-up strips only fill line buffers (warm without line_buffer)

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 2, rows = 2, strips = 4, halo = [1, 1], sram = 64>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: #npu_tile.strip: 'rows' is given twice

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.group<sram = 64, offsets = [0, 0], in_place = [1, 0]>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: #npu_tile.group: in_place lists op positions in increasing order, got [1, 0]
