// RUN: %opt %s --split-input-file --verify-diagnostics -p npu-tile-loops | filecheck %s

// A plan whose loops are not the kernel's (a matmul's are m,n,k) is named, with
// the kernel and its ONNX node.
builtin.module {
  func.func @main(%x: tensor<4x32xf32>, %w: tensor<32x16xf32>) -> tensor<4x16xf32> {
    %y = npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n"], tile = array<i64: 4, 16>, grid = array<i64: 1, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 1 : i64} : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x32xf32>, %b: tensor<32x16xf32>):
      %g = npu_graph.matmul %a, %b : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
      npu_tile.yield %g : tensor<4x16xf32>
    } loc("mm_node")
    func.return %y : tensor<4x16xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'mm': loops 'm,n' do not match a matmul kernel (m,n,k, its parallel loops in any order) at 'npu_tile.kernel' (ONNX node mm_node)

// -----

// The parallel loops may come in any order (the tile search's `ordered`: n outside m
// here, accepted), the reduction loop must stay innermost.
builtin.module {
  func.func @main(%x: tensor<4x32xf32>, %w: tensor<32x16xf32>) -> tensor<4x16xf32> {
    %y = npu_tile.kernel "mm"(%x, %w) matmul {loops = ["n", "k", "m"], tile = array<i64: 16, 32, 4>, grid = array<i64: 1, 1, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 1 : i64} : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x32xf32>, %b: tensor<32x16xf32>):
      %g = npu_graph.matmul %a, %b : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
      npu_tile.yield %g : tensor<4x16xf32>
    } loc("mm_node")
    func.return %y : tensor<4x16xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'mm': loops 'n,k,m' do not match a matmul kernel (m,n,k, its parallel loops in any order) at 'npu_tile.kernel' (ONNX node mm_node)

// -----

// Trip counts that the tile sizes do not give.
builtin.module {
  func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %y = npu_tile.kernel "act"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 64>, grid = array<i64: 3, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>):
      %t = npu_graph.tanh %a : (tensor<8x64xf32>) -> tensor<8x64xf32>
      npu_tile.yield %t : tensor<8x64xf32>
    }
    func.return %y : tensor<8x64xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'act': grid [3, 1] does not match the tile sizes (expected [2, 1])

// -----

// A strip group storing an inner value whose rows its strips do not cover: %o has 5
// rows, the valid 3x3 conv's strips of 2 rows step 2 of them twice (rows 0-3).
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 40960>} {
  func.func @main(%x: tensor<1x4x5x256xf32>, %w1: tensor<4x4x3x3xf32>, %w2: tensor<4x4x3x3xf32>) -> (tensor<1x4x5x256xf32>, tensor<1x4x3x254xf32>) {
    %o, %y = npu_tile.kernel "c1..c2"(%x, %w1, %w2) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 2, strips = 2, halo = [1, 2], sram = 0>} : (tensor<1x4x5x256xf32>, tensor<4x4x3x3xf32>, tensor<4x4x3x3xf32>) -> (tensor<1x4x5x256xf32>, tensor<1x4x3x254xf32>) {
    ^bb0(%0: tensor<1x4x5x256xf32>, %1: tensor<4x4x3x3xf32>, %2: tensor<4x4x3x3xf32>):
      %o_1 = npu_graph.conv2d %0, %1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x5x256xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x5x256xf32>
      %y_1 = npu_graph.conv2d %o_1, %2 : (tensor<1x4x5x256xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x3x254xf32>
      npu_tile.yield %o_1, %y_1 : tensor<1x4x5x256xf32>, tensor<1x4x3x254xf32>
    } loc("c1..c2")
    func.return %o, %y : tensor<1x4x5x256xf32>, tensor<1x4x3x254xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'c1..c2': strips of 2 rows do not cover every row of the inner values it stores, each strip some of them at 'npu_tile.kernel' (ONNX node c1..c2)

// -----

// A strip group whose kernel does not yield its last op's result (what the strips store).
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 40960>} {
  func.func @main(%x: tensor<1x4x8x8xf32>, %w1: tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
    %o = npu_tile.kernel "c..r"(%x, %w1) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [1, 1], sram = 0>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%0: tensor<1x4x8x8xf32>, %1: tensor<4x4x3x3xf32>):
      %o_1 = npu_graph.conv2d %0, %1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
      %r = npu_graph.relu %o_1 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %o_1 : tensor<1x4x8x8xf32>
    } loc("c..r")
    func.return %o : tensor<1x4x8x8xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'c..r': a strip group yields its last op's result, and each other value once at 'npu_tile.kernel' (ONNX node c..r)
