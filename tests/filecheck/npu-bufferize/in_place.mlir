// RUN: %opt %s --split-input-file -p npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// In-place candidates: a kernel's output may take the bytes of an activation
// buffer it reads only at the output tile's own position (npu-memplan decides).
// conv "c1" adds "sig" (read only as the residual) -> reuse; "c2" adds its own
// input, which it also reads with a halo -> no reuse; "c3" writes the model output.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<8x8x3x3xf32>
    %a = npu_tile.kernel "relu"(%x) eltwise {loops = ["d0", "d1", "d2", "d3"], tile = array<i64: 1, 8, 4, 4>, grid = array<i64: 1, 1, 1, 1>, double_buffer = true, sram_bytes = 1536 : i64, predicted_cycles = 410 : i64, dram_bytes = 1024 : i64, parts = 1 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
    ^bb0(%0: tensor<1x8x4x4xf32>):
      %a_1 = npu_graph.relu %0 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
      npu_tile.yield %a_1 : tensor<1x8x4x4xf32>
    }
    %b = npu_tile.kernel "sigmoid"(%x) eltwise {loops = ["d0", "d1", "d2", "d3"], tile = array<i64: 1, 8, 4, 4>, grid = array<i64: 1, 1, 1, 1>, double_buffer = true, sram_bytes = 1536 : i64, predicted_cycles = 410 : i64, dram_bytes = 1024 : i64, parts = 1 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
    ^bb0(%1: tensor<1x8x4x4xf32>):
      %b_1 = npu_graph.sigmoid %1 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
      npu_tile.yield %b_1 : tensor<1x8x4x4xf32>
    }
    %s = npu_tile.kernel "c1"(%a, %w, %b) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 8, 4, 4, 8>, grid = array<i64: 1, 1, 1, 1, 1>, double_buffer = true, sram_bytes = 8448 : i64, predicted_cycles = 619 : i64, dram_bytes = 3840 : i64, parts = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
    ^bb0(%2: tensor<1x8x4x4xf32>, %3: tensor<8x8x3x3xf32>, %4: tensor<1x8x4x4xf32>):
      %c = npu_graph.conv2d %2, %3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
      %s_1 = npu_graph.add %c, %4 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
      npu_tile.yield %s_1 : tensor<1x8x4x4xf32>
    }
    %e = npu_tile.kernel "c2"(%s, %w) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 8, 4, 4, 8>, grid = array<i64: 1, 1, 1, 1, 1>, double_buffer = true, sram_bytes = 8448 : i64, predicted_cycles = 619 : i64, dram_bytes = 3840 : i64, parts = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32> {
    ^bb0(%5: tensor<1x8x4x4xf32>, %6: tensor<8x8x3x3xf32>):
      %d = npu_graph.conv2d %5, %6 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
      %e_1 = npu_graph.add %d, %5 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
      npu_tile.yield %e_1 : tensor<1x8x4x4xf32>
    }
    %h = npu_tile.kernel "c3"(%e, %w, %x) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 8, 4, 4, 8>, grid = array<i64: 1, 1, 1, 1, 1>, double_buffer = true, sram_bytes = 8448 : i64, predicted_cycles = 621 : i64, dram_bytes = 3840 : i64, parts = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
    ^bb0(%7: tensor<1x8x4x4xf32>, %8: tensor<8x8x3x3xf32>, %9: tensor<1x8x4x4xf32>):
      %f = npu_graph.conv2d %7, %8 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
      %g = npu_graph.add %f, %9 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
      %h_1 = npu_graph.relu %g : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
      npu_tile.yield %h_1 : tensor<1x8x4x4xf32>
    }
    func.return %h : tensor<1x8x4x4xf32>
  }
}

// CHECK:      %[[RELU:.*]] = npu_task.alloc : memref<1x8x4x4xf32, "dram">
// CHECK-NEXT: npu_task.task "relu"
// CHECK:      %[[SIG:.*]] = npu_task.alloc : memref<1x8x4x4xf32, "dram">
// CHECK-NEXT: npu_task.task "sigmoid"
// CHECK:      %[[C1:.*]] = npu_task.alloc reuse(%[[SIG]] : memref<1x8x4x4xf32, "dram">) : memref<1x8x4x4xf32, "dram">
// CHECK-NEXT: npu_task.task "c1"
// CHECK:      %{{.*}} = npu_task.alloc : memref<1x8x4x4xf32, "dram">
// CHECK-NEXT: npu_task.task "c2"
// CHECK-NOT:  npu_task.alloc
// CHECK:      npu_task.task "c3"

// -----

// Must not fire through a view: "neg" reads %a through the reshape %r at its own tile,
// but "sig" reads %a afterwards; a kernel reading a view marks no reuse (npu-memplan
// merges allocs only, and a view's base may have readers the view does not see).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x16xf32>) -> (tensor<16x4xf32>, tensor<4x16xf32>) {
    %a = npu_tile.kernel "relu"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 16>, grid = array<i64: 1, 1>, double_buffer = false, sram_bytes = 512 : i64, predicted_cycles = 0 : i64, dram_bytes = 512 : i64, parts = 1 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%0: tensor<4x16xf32>):
      %a_1 = npu_graph.relu %0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
      npu_tile.yield %a_1 : tensor<4x16xf32>
    }
    %r = npu_tile.kernel "flat"(%a) view {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64} : (tensor<4x16xf32>) -> tensor<16x4xf32> {
    ^bb0(%1: tensor<4x16xf32>):
      %r_1 = npu_graph.reshape %1 : (tensor<4x16xf32>) -> tensor<16x4xf32>
      npu_tile.yield %r_1 : tensor<16x4xf32>
    }
    %n = npu_tile.kernel "neg"(%r) eltwise {loops = ["d0", "d1"], tile = array<i64: 16, 4>, grid = array<i64: 1, 1>, double_buffer = false, sram_bytes = 512 : i64, predicted_cycles = 0 : i64, dram_bytes = 512 : i64, parts = 1 : i64} : (tensor<16x4xf32>) -> tensor<16x4xf32> {
    ^bb0(%2: tensor<16x4xf32>):
      %n_1 = npu_graph.neg %2 : (tensor<16x4xf32>) -> tensor<16x4xf32>
      npu_tile.yield %n_1 : tensor<16x4xf32>
    }
    %m = npu_tile.kernel "exp"(%n) eltwise {loops = ["d0", "d1"], tile = array<i64: 16, 4>, grid = array<i64: 1, 1>, double_buffer = false, sram_bytes = 512 : i64, predicted_cycles = 0 : i64, dram_bytes = 512 : i64, parts = 1 : i64} : (tensor<16x4xf32>) -> tensor<16x4xf32> {
    ^bb0(%3: tensor<16x4xf32>):
      %m_1 = npu_graph.exp %3 : (tensor<16x4xf32>) -> tensor<16x4xf32>
      npu_tile.yield %m_1 : tensor<16x4xf32>
    }
    %s = npu_tile.kernel "sig"(%a) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 16>, grid = array<i64: 1, 1>, double_buffer = false, sram_bytes = 512 : i64, predicted_cycles = 0 : i64, dram_bytes = 512 : i64, parts = 1 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%4: tensor<4x16xf32>):
      %s_1 = npu_graph.sigmoid %4 : (tensor<4x16xf32>) -> tensor<4x16xf32>
      npu_tile.yield %s_1 : tensor<4x16xf32>
    }
    func.return %m, %s : tensor<16x4xf32>, tensor<4x16xf32>
  }
}
// CHECK:      %[[A:.*]] = npu_task.alloc : memref<4x16xf32, "dram">
// CHECK-NEXT: npu_task.task "relu"
// CHECK:      %[[R:.*]] = npu_task.view %[[A]]
// CHECK-NOT:  reuse(%[[R]]
// CHECK-NOT:  reuse(%[[A]]
// CHECK:      npu_task.alloc : memref<16x4xf32, "dram">
// CHECK-NEXT: npu_task.task "neg"
