// RUN: npu-opt %s --split-input-file --verify-diagnostics -p npu-tile-loops,npu-bufferize | filecheck %s
// npu-bufferize follows the plan npu-layer-group recorded on a group kernel; it makes
// no choice of its own, so a missing plan or one its ops do not give is an error
// naming the kernel.

// A strip group without its plan.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
    %y = npu_tile.kernel "conv..relu"(%x, %w) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 16>, double_buffer = false} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%a: tensor<1x16x32x32xf32>, %b: tensor<16x16x3x3xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %r : tensor<1x16x32x32xf32>
    } loc("conv..relu")
    func.return %y : tensor<1x16x32x32xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'conv..relu': a strip group needs its #npu_tile.strip plan (npu-layer-group records it) at 'npu_tile.kernel' (ONNX node conv..relu)

// -----

// A plan whose SRAM arena and halo are not what its strips of 2 rows need (21504
// bytes, one row above and below).
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
    %y = npu_tile.kernel "conv..relu"(%x, %w) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 16>, double_buffer = false, plan = #npu_tile.strip<rows = 2, strips = 16, halo = [2, 2], sram = 16384>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%a: tensor<1x16x32x32xf32>, %b: tensor<16x16x3x3xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %r : tensor<1x16x32x32xf32>
    } loc("conv..relu")
    func.return %y : tensor<1x16x32x32xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'conv..relu': its plan #npu_tile.strip<rows = 2, strips = 16, halo = [2, 2], sram = 16384> does not match its ops: halo = [2, 2] (its strips give [1, 1]), sram = 16384 (its strips give 21504)

// -----

// Strips of 8 rows do not fit 32 KiB: the recorded plan is not one the pass can follow.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
    %y = npu_tile.kernel "conv..relu"(%x, %w) group {loops = ["h"], tile = array<i64: 8>, grid = array<i64: 4>, double_buffer = false, plan = #npu_tile.strip<rows = 8, strips = 4, halo = [1, 1], sram = 32768>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%a: tensor<1x16x32x32xf32>, %b: tensor<16x16x3x3xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %r : tensor<1x16x32x32xf32>
    } loc("conv..relu")
    func.return %y : tensor<1x16x32x32xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'conv..relu': its plan's strips of 8 rows do not fit sram_bytes=32768

// -----

// The plan overwrites operand 0 (the group input, read with a halo) in place.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
    %y = npu_tile.kernel "conv..relu"(%x, %w) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 16>, double_buffer = false, plan = #npu_tile.strip<rows = 2, strips = 16, halo = [1, 1], sram = 21504, in_place = 0>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%a: tensor<1x16x32x32xf32>, %b: tensor<16x16x3x3xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %r : tensor<1x16x32x32xf32>
    } loc("conv..relu")
    func.return %y : tensor<1x16x32x32xf32>
  }
}
// CHECK: error: npu-bufferize: kernel 'conv..relu': its plan overwrites operand 0 in place, which is not a side input read once at the rows each strip stores

// -----

// A layer group whose recorded arena is larger than the core's SRAM: the kernel's
// verifier rejects it before npu-bufferize (which checks it too) runs.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) -> tensor<4x64xf32> {
    %y = npu_tile.kernel "fc..relu"(%x, %w) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 65536, offsets = [16384, 0, 17408, 17408], in_place = [1]>} : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%a: tensor<4x64xf32>, %b: tensor<64x64xf32>):
      %0 = npu_graph.matmul %a, %b : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      %1 = npu_graph.relu %0 : (tensor<4x64xf32>) -> tensor<4x64xf32>
      npu_tile.yield %1 : tensor<4x64xf32>
    } loc("fc..relu")
    func.return %y : tensor<4x64xf32>
  }
}
// CHECK: 'npu_tile.kernel' fc..relu: the SRAM arena of its plan at bytes [0, 65536) is not within [0, 32768) (sram_bytes of the arch)

// -----

// A layer group without its plan.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) -> tensor<4x64xf32> {
    %y = npu_tile.kernel "fc..relu"(%x, %w) group {loops = [], tile = array<i64>, grid = array<i64>} : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%a: tensor<4x64xf32>, %b: tensor<64x64xf32>):
      %0 = npu_graph.matmul %a, %b : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      %1 = npu_graph.relu %0 : (tensor<4x64xf32>) -> tensor<4x64xf32>
      npu_tile.yield %1 : tensor<4x64xf32>
    } loc("fc..relu")
    func.return %y : tensor<4x64xf32>
  }
}
// CHECK: error: npu-bufferize: kernel 'fc..relu': a layer group needs its #npu_tile.group plan (npu-layer-group records it) at 'npu_tile.kernel' (ONNX node fc..relu)
