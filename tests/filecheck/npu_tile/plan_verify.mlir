// RUN: %opt %s --split-input-file --verify-diagnostics | filecheck %s
// A kernel's plan must agree with its loop nest and body.

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 4096>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.kernel' g: plan #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 4096> does not match loops ['h'], tile [2], grid [4], double_buffer False, line_buffer False

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [0, 0], sram = 4096, in_place = 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.kernel' g: plan in_place = 1 names no operand (the kernel has 1)

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, plan = #npu_tile.group<sram = 4096, offsets = [0, 0]>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.kernel' g: a group plan needs no loops (or batch slices, loops ["n"]) and one offset per body value (2), got 2

// -----

func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = ["n"], tile = array<i64: 2>, grid = array<i64: 3>, plan = #npu_tile.group<sram = 4096, offsets = [0, 0]>} : (tensor<8x4xf32>) -> tensor<8x4xf32> {
  ^bb0(%a: tensor<8x4xf32>):
    %0 = npu_graph.relu %a : (tensor<8x4xf32>) -> tensor<8x4xf32>
    npu_tile.yield %0 : tensor<8x4xf32>
  }
  func.return %y : tensor<8x4xf32>
}
// CHECK: 'npu_tile.kernel' g: 3 batch slices of 2 do not cover the batch of its result tensor<8x4xf32>

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 1024, offsets = [0, 512]>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.kernel' g: plan puts a tensor<1x4x8x8xf32> at byte 512, past its sram = 1024
