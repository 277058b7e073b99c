// RUN: not npu-opt %s --split-input-file -p npu-tile-loops,npu-bufferize 2>&1 | filecheck %s
// RUN: npu-opt %s --split-input-file --verify-diagnostics -p npu-tile-loops,npu-bufferize | filecheck %s --check-prefix=DIAG

// A strip group (loops "h") whose ops are not a chain: the second op reads a tensor
// that varies over H besides the running one.
builtin.module {
  func.func @main(%x: tensor<1x4x8x8xf32>, %y: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    %r = npu_tile.kernel "g"(%x, %y) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%a: tensor<1x4x8x8xf32>, %b: tensor<1x4x8x8xf32>):
      %s = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      %t = npu_graph.add %s, %b : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %t : tensor<1x4x8x8xf32>
    } loc("g")
    func.return %r : tensor<1x4x8x8xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'g': a strip group must be conv, pool, elementwise, channel-shuffle and channel-concat ops over one input at 'npu_tile.kernel' (ONNX node g)
// DIAG: error: npu-tile-loops: kernel 'g': a strip group must be conv, pool


// -----

// A line-buffered strip group with a concat computed in channel ranges (a fire module).
builtin.module {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w1: tensor<4x4x1x1xf32>, %w3: tensor<4x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
    %r = npu_tile.kernel "fire"(%x, %w1, %w3) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64, line_buffer, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0, line_buffer, warm = 0>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>, tensor<4x4x3x3xf32>) -> tensor<1x8x8x8xf32> {
    ^bb0(%a: tensor<1x4x8x8xf32>, %b: tensor<4x4x1x1xf32>, %c: tensor<4x4x3x3xf32>):
      %s = npu_graph.conv2d %a, %b : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
      %t = npu_graph.conv2d %a, %c {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
      %y = npu_graph.concat %s, %t {axis = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32>
      npu_tile.yield %y : tensor<1x8x8x8xf32>
    } loc("fire")
    func.return %r : tensor<1x8x8x8xf32>
  }
}
// DIAG: error: npu-tile-loops: kernel 'fire': line_buffer: a strip group with a concat or a reshape cannot line-buffer at 'npu_tile.kernel' (ONNX node fire)

// -----

// A line-buffered strip group whose strips share no rows (1x1 convs only).
builtin.module {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
    %r = npu_tile.kernel "pointwise"(%x, %w) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64, line_buffer, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0, line_buffer, warm = 0>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%a: tensor<1x4x8x8xf32>, %b: tensor<4x4x1x1xf32>):
      %s = npu_graph.conv2d %a, %b : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
      %t = npu_graph.relu %s : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      %y = npu_graph.conv2d %t, %b : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %y : tensor<1x4x8x8xf32>
    } loc("pointwise")
    func.return %r : tensor<1x4x8x8xf32>
  }
}
// DIAG: error: npu-tile-loops: kernel 'pointwise': line_buffer: no value of strips of 4 rows shares rows with the next strip at 'npu_tile.kernel' (ONNX node pointwise)

// -----

// A plan that has a stored inner value (%o_1) overwrite operand 1 - a weight, not a
// residual side input read at the rows each strip stores.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>) {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<16x16x3x3xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<8x16x1x1xf32>
    %o, %c = npu_tile.kernel "c1..r2"(%x, %w1, %w2) group {loops = ["h"], tile = array<i64: 3>, grid = array<i64: 11>, sram_bytes = 29184 : i64, predicted_cycles = 7400 : i64, dram_bytes = 223744 : i64, plan = #npu_tile.strip<rows = 3, strips = 11, halo = [1, 1], sram = 29184, stored_in_place = [1]>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>, tensor<8x16x1x1xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>) {
    ^bb0(%0: tensor<1x16x32x32xf32>, %1: tensor<16x16x3x3xf32>, %2: tensor<8x16x1x1xf32>):
      %a = npu_graph.conv2d %0, %1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      %o_1 = npu_graph.relu %a : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      %b = npu_graph.conv2d %o_1, %2 : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32>
      %c_1 = npu_graph.relu %b : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
      npu_tile.yield %o_1, %c_1 : tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>
    } loc("c1..r2")
    func.return %o, %c : tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>
  }
}
// CHECK: error: npu-bufferize: kernel 'c1..r2': its plan overwrites operand 1 in place, which is not a side input read once at the rows each strip stores (without warm-up strips, for a stored value) at 'npu_tile.kernel' (ONNX node c1..r2)
// DIAG: error: npu-bufferize: kernel 'c1..r2': its plan overwrites operand 1 in place
