// RUN: %opt %s --split-input-file --verify-diagnostics | filecheck %s
// Element types in npu_tile (docs/low-precision.md): a window moves elements and
// converts none, and a group plan's buffers are sized by their type.

func.func @f(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf16>) -> tensor<4x8xf16> {
  ^bb0(%a: tensor<4x8xf16>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf16> {
    ^bb1(%i: index, %j: index):
      %t = "npu_tile.load"(%a, %i, %j) <{coefs = array<i64: 4, 0, 0, 8>, consts = array<i64: 0, 0>, sizes = array<i64: 4, 8>}> : (tensor<4x8xf16>, index, index) -> tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf16>
  }
  func.return %0 : tensor<4x8xf16>
}
// CHECK: 'npu_tile.load': the tile's element type f32 must be the tensor's (f16): a window moves elements, it converts none

// -----

func.func @f(%x: tensor<4x8xi8>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xi8>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xi8>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xi8>
      %s = npu_tile.reduce %t : tensor<4x8xi8> -> tensor<4x8xi8>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xi8>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.store': the tile's element type i8 must be the tensor's (f32): a window moves elements, it converts none

// -----

func.func @f(%x: tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 4096, line_buffer>, line_buffer} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16> {
  ^bb0(%a: tensor<1x4x8x8xf16>):
    %r = npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 4096, line_buffer>} -> tensor<1x4x8x8xf16> {
    ^bb1(%s: index):
      %t = npu_tile.load %a(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x8x8xf16>
      %n = npu_tile.line_buffer %t : tensor<1x4x4x8xf16> -> tensor<1x4x6x8xf32>
      npu_tile.store %t(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf16>
    } group {
      %0 = npu_graph.relu %a : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
    }
    npu_tile.yield %r : tensor<1x4x8x8xf16>
  }
  func.return %y : tensor<1x4x8x8xf16>
}
// CHECK: 'npu_tile.line_buffer': tensor<1x4x4x8xf16> must be fewer rows (dim -2) of tensor<1x4x6x8xf32> (same element type)

// -----

// plan_verify.mlir's plan with a tensor past its sram, in f16: its 512 bytes at byte 512
// end at 1024, inside (the f32 tensor's 1024 bytes are not).
func.func @f(%x: tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16> {
  %y = npu_tile.kernel "g"(%x) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 1024, offsets = [0, 512]>} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16> {
  ^bb0(%a: tensor<1x4x8x8xf16>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
    npu_tile.yield %0 : tensor<1x4x8x8xf16>
  }
  func.return %y : tensor<1x4x8x8xf16>
}
// CHECK: npu_tile.kernel "g"(%x) group {{.*}}plan = #npu_tile.group<sram = 1024, offsets = [0, 512]>

// -----

func.func @f(%x: tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16> {
  %y = npu_tile.kernel "g"(%x) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 1024, offsets = [0, 513]>} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16> {
  ^bb0(%a: tensor<1x4x8x8xf16>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
    npu_tile.yield %0 : tensor<1x4x8x8xf16>
  }
  func.return %y : tensor<1x4x8x8xf16>
}
// CHECK: 'npu_tile.kernel' g: plan puts a tensor<1x4x8x8xf16> at byte 513, past its sram = 1024
