// RUN: %opt %s -p npu-tile-loops,npu-bufferize,npu-schedule,npu-events,npu-memplan -o %t.mlir && filecheck %s < %t.mlir

// A strip group adding a residual (%r, a side input read at exactly the rows each
// strip stores, and by nothing else in the group) may write its output over it:
// the output alloc is marked reuse(%r) and npu-memplan gives both the same bytes.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x16x3x3xf32>
    %r = npu_tile.kernel "r"(%x) eltwise {loops = ["d0", "d1", "d2", "d3"], tile = array<i64: 1, 4, 32, 32>, grid = array<i64: 1, 4, 1, 1>, double_buffer = false, sram_bytes = 32768 : i64, predicted_cycles = 2880 : i64, dram_bytes = 131072 : i64, parts = 1 : i64} : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%0: tensor<1x16x32x32xf32>):
      %r_1 = npu_graph.relu %0 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("r")
      npu_tile.yield %r_1 : tensor<1x16x32x32xf32>
    } loc("r")
    %s = npu_tile.kernel "s"(%x) eltwise {loops = ["d0", "d1", "d2", "d3"], tile = array<i64: 1, 4, 32, 32>, grid = array<i64: 1, 4, 1, 1>, double_buffer = false, sram_bytes = 32768 : i64, predicted_cycles = 2880 : i64, dram_bytes = 131072 : i64, parts = 1 : i64} : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%1: tensor<1x16x32x32xf32>):
      %s_1 = npu_graph.sigmoid %1 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("s")
      npu_tile.yield %s_1 : tensor<1x16x32x32xf32>
    } loc("s")
    %d = npu_tile.kernel "conv..res"(%s, %w, %r) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 16>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64, plan = #npu_tile.strip<rows = 2, strips = 16, halo = [1, 1], sram = 25600, in_place = 2>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%a: tensor<1x16x32x32xf32>, %b: tensor<16x16x3x3xf32>, %q: tensor<1x16x32x32xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      %t = npu_graph.add %c, %q : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %t : tensor<1x16x32x32xf32>
    } loc("conv..res")
    %e = npu_tile.kernel "e"(%d) eltwise {loops = ["d0", "d1", "d2", "d3"], tile = array<i64: 1, 4, 32, 32>, grid = array<i64: 1, 4, 1, 1>, double_buffer = false, sram_bytes = 32768 : i64, predicted_cycles = 2880 : i64, dram_bytes = 131072 : i64, parts = 1 : i64} : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%6: tensor<1x16x32x32xf32>):
      %e_1 = npu_graph.neg %6 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("e")
      npu_tile.yield %e_1 : tensor<1x16x32x32xf32>
    } loc("e")
    func.return %e : tensor<1x16x32x32xf32>
  }
}

// CHECK:      %[[R:.*]] = npu_task.alloc {offset = [[OFF:[0-9]+]] : i64} : memref<1x16x32x32xf32, "dram">
// CHECK:      %[[D:.*]] = npu_task.alloc reuse(%[[R]] : memref<1x16x32x32xf32, "dram">) {offset = [[OFF]] : i64}
// CHECK-NEXT: npu_task.task "conv..res"
