// RUN: %roundtrip
// npu_tile.kernel keeps the graph ops of a kernel and records the tiling
// decision as attributes; npu_tile.yield gives its results.

builtin.module {
  // CHECK-LABEL: func.func @conv
  func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
    // Every attribute, double buffered.
    // CHECK:      %r = npu_tile.kernel "conv"(%x, %w, %b) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 1, 8, 8, 3>, grid = array<i64: 1, 4, 1, 1, 1>, double_buffer = true, sram_bytes = 3072 : i64, predicted_cycles = 2851 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> {
    // CHECK-NEXT: ^bb0(%0: tensor<1x3x8x8xf32>, %1: tensor<4x3x3x3xf32>, %2: tensor<4xf32>):
    // CHECK:        npu_tile.yield %r_1 : tensor<1x4x8x8xf32>
    %r = npu_tile.kernel "conv"(%x, %w, %b) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 1, 8, 8, 3>, grid = array<i64: 1, 4, 1, 1, 1>, double_buffer = true, sram_bytes = 3072 : i64, predicted_cycles = 2851 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%0: tensor<1x3x8x8xf32>, %1: tensor<4x3x3x3xf32>, %2: tensor<4xf32>):
      %c = npu_graph.conv2d %0, %1, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
      %r_1 = npu_graph.relu %c : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %r_1 : tensor<1x4x8x8xf32>
    }
    func.return %r : tensor<1x4x8x8xf32>
  }

  // CHECK-LABEL: func.func @matmul
  func.func @matmul(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
    // Only the required attributes; single buffered.
    // CHECK: %m = npu_tile.kernel "fc"(%a, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 32, 16, 32>, grid = array<i64: 2, 3, 1>} : (tensor<64x32xf32>, tensor<32x48xf32>) -> tensor<64x48xf32> {
    // CHECK: npu_tile.yield %g : tensor<64x48xf32>
    %m = npu_tile.kernel "fc"(%a, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 32, 16, 32>, grid = array<i64: 2, 3, 1>} : (tensor<64x32xf32>, tensor<32x48xf32>) -> tensor<64x48xf32> {
    ^bb0(%i: tensor<64x32xf32>, %j: tensor<32x48xf32>):
      %g = npu_graph.matmul %i, %j : (tensor<64x32xf32>, tensor<32x48xf32>) -> tensor<64x48xf32>
      npu_tile.yield %g : tensor<64x48xf32>
    }
    func.return %m : tensor<64x48xf32>
  }

  // CHECK-LABEL: func.func @kinds
  func.func @kinds(%x: tensor<1x4x8x8xf32>) -> tensor<64xf32> {
    // CHECK: npu_tile.kernel "pool"(%x) pool {loops = ["n", "c", "oh", "ow"], tile = array<i64: 1, 1, 4, 4>, grid = array<i64: 1, 4, 1, 1>, sram_bytes = 576 : i64, predicted_cycles = 1814 : i64}
    // CHECK: npu_tile.kernel "act"(%p) eltwise {loops = ["n", "c", "h", "w"], tile = array<i64: 1, 4, 4, 4>, grid = array<i64: 1, 1, 1, 1>}
    // CHECK: npu_tile.kernel "flat"(%e) view {loops = [], tile = array<i64>, grid = array<i64>}
    %p = npu_tile.kernel "pool"(%x) pool {loops = ["n", "c", "oh", "ow"], tile = array<i64: 1, 1, 4, 4>, grid = array<i64: 1, 4, 1, 1>, double_buffer = false, sram_bytes = 576 : i64, predicted_cycles = 1814 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
    ^bb0(%i: tensor<1x4x8x8xf32>):
      %q = npu_graph.maxpool %i {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
      npu_tile.yield %q : tensor<1x4x4x4xf32>
    }
    %e = npu_tile.kernel "act"(%p) eltwise {loops = ["n", "c", "h", "w"], tile = array<i64: 1, 4, 4, 4>, grid = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
    ^bb0(%i: tensor<1x4x4x4xf32>):
      %q = npu_graph.relu %i : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
      npu_tile.yield %q : tensor<1x4x4x4xf32>
    }
    %v = npu_tile.kernel "flat"(%e) view {loops = [], tile = array<i64>, grid = array<i64>} : (tensor<1x4x4x4xf32>) -> tensor<64xf32> {
    ^bb0(%i: tensor<1x4x4x4xf32>):
      %q = npu_graph.reshape %i : (tensor<1x4x4x4xf32>) -> tensor<64xf32>
      npu_tile.yield %q : tensor<64xf32>
    }
    func.return %v : tensor<64xf32>
  }
}
