// RUN: %roundtrip
// The plans npu-layer-group records on group kernels print and parse back:
// #npu_tile.strip on a strip group (loops "h"), #npu_tile.group on a layer group.

builtin.module {
  func.func @strips(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %q: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    %y = npu_tile.kernel "conv..res"(%x, %w, %q) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, double_buffer = true, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [1, 1], sram = 4096, prefetch, in_place = 2>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%a: tensor<1x4x8x8xf32>, %b: tensor<4x4x3x3xf32>, %c: tensor<1x4x8x8xf32>):
      %0 = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
      %1 = npu_graph.add %0, %c : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %1 : tensor<1x4x8x8xf32>
    }
    func.return %y : tensor<1x4x8x8xf32>
  }
  // CHECK-LABEL: func.func @strips
  // CHECK: double_buffer = true, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [1, 1], sram = 4096, prefetch, in_place = 2>}

  func.func @stored(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>, %q: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
    %o, %y = npu_tile.kernel "res..conv"(%x, %w, %q) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [0, 0], sram = 4096, stored_in_place = [2]>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>, tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
    ^bb0(%a: tensor<1x4x8x8xf32>, %b: tensor<4x4x1x1xf32>, %c: tensor<1x4x8x8xf32>):
      %0 = npu_graph.add %a, %c : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      %1 = npu_graph.conv2d %0, %b : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
    }
    func.return %o, %y : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
  }
  // CHECK-LABEL: func.func @stored
  // CHECK: plan = #npu_tile.strip<rows = 2, strips = 4, halo = [0, 0], sram = 4096, stored_in_place = [2]>}

  func.func @lines(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
    %y = npu_tile.kernel "c0..c1"(%x, %w) group {loops = ["h"], tile = array<i64: 1>, grid = array<i64: 8>, line_buffer, plan = #npu_tile.strip<warm = 2, line_buffer, rows = 1, strips = 8, halo = [-1, 1], sram = 2048>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%a: tensor<1x4x8x8xf32>, %b: tensor<4x4x3x3xf32>):
      %0 = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %0 : tensor<1x4x8x8xf32>
    }
    func.return %y : tensor<1x4x8x8xf32>
  }
  // CHECK-LABEL: func.func @lines
  // CHECK: line_buffer, plan = #npu_tile.strip<rows = 1, strips = 8, halo = [-1, 1], sram = 2048, line_buffer, warm = 2>}

  func.func @group(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) -> tensor<4x64xf32> {
    %y = npu_tile.kernel "fc..relu"(%x, %w) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 18432, offsets = [16384, 0, 17408, 17408], in_place = [1]>} : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%a: tensor<4x64xf32>, %b: tensor<64x64xf32>):
      %0 = npu_graph.matmul %a, %b : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      %1 = npu_graph.relu %0 : (tensor<4x64xf32>) -> tensor<4x64xf32>
      npu_tile.yield %1 : tensor<4x64xf32>
    }
    func.return %y : tensor<4x64xf32>
  }
  // CHECK-LABEL: func.func @group
  // CHECK: plan = #npu_tile.group<sram = 18432, offsets = [16384, 0, 17408, 17408], in_place = [1]>}
}
