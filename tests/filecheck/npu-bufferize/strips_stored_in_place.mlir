// RUN: %opt %s -p npu-tile-loops,npu-bufferize,npu-schedule,npu-events,npu-memplan -o %t.mlir && filecheck %s < %t.mlir

// npu-layer-group's two ResNet-style blocks (npu-layer-group/strips_stored.mlir, its
// last case): the strip group d..f_relu stores the block output %o2 over its residual
// %o1 (`stored_in_place = [2]`: read once, at the rows each strip stores, dead after),
// so its alloc is marked reuse(%o1) and npu-memplan gives both the same bytes; its
// last op's result %f1 gets a buffer of its own.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, cube = 16x16x16, vector_lanes = 64, sram_bytes = 32768, dram_bw = 128, dma_latency = 200, dma_channels = 2, event_slots = 64, sync_latency = 100, freq = 1000000000, align = 64, cube_i8 = 2, cube_f32_passes = 1, vector_f16 = 2, vector_i8 = 4, requant = float, requant_unit = cube, bias_unit = cube, units = concurrent, flag_latency = 4, fn_exp = exact, fn_tanh = exact, fn_erf = exact, fn_sigmoid = exact, fn_reciprocal = exact, fn_rsqrt = exact>, npu.model_macs = 4980736 : i64, npu.model_min_bytes = 150528 : i64, npu.kernel_min_bytes = 1330176 : i64, npu.fusion_floor_bytes = 150528 : i64} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    %ws = npu_graph.constant {weight = "ws"} : tensor<16x16x3x3xf32>
    %wb = npu_graph.constant {weight = "wb"} : tensor<8x16x1x1xf32>
    %wd = npu_graph.constant {weight = "wd"} : tensor<16x8x3x3xf32>
    %wf = npu_graph.constant {weight = "wf"} : tensor<8x16x1x1xf32>
    %wh = npu_graph.constant {weight = "wh"} : tensor<16x8x3x3xf32>
    %o1, %b1 = npu_tile.kernel "stem..b_relu"(%x, %ws, %wb) group {loops = ["h"], tile = array<i64: 3>, grid = array<i64: 11>, sram_bytes = 29184 : i64, predicted_cycles = 3800 : i64, dram_bytes = 252928 : i64, parts = 4 : i64, part_cycles = array<i64: 7400, 5144, 4260, 3800>, plan = #npu_tile.strip<rows = 3, strips = 11, halo = [1, 1], sram = 29184>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>, tensor<8x16x1x1xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>) {
    ^bb0(%0: tensor<1x16x32x32xf32>, %1: tensor<16x16x3x3xf32>, %2: tensor<8x16x1x1xf32>):
      %s0 = npu_graph.conv2d %0, %1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      %o1_1 = npu_graph.relu %s0 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      %b0 = npu_graph.conv2d %o1_1, %2 : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32>
      %b1_1 = npu_graph.relu %b0 : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
      npu_tile.yield %o1_1, %b1_1 : tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>
    }
    %o2, %f1 = npu_tile.kernel "d..f_relu"(%b1, %wd, %o1, %wf) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 8>, sram_bytes = 31744 : i64, predicted_cycles = 2680 : i64, dram_bytes = 233472 : i64, parts = 4 : i64, part_cycles = array<i64: 5740, 3664, 3361, 2680>, plan = #npu_tile.strip<rows = 4, strips = 8, halo = [1, 1], sram = 31744, stored_in_place = [2]>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>, tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>) {
    ^bb0(%3: tensor<1x8x32x32xf32>, %4: tensor<16x8x3x3xf32>, %5: tensor<1x16x32x32xf32>, %6: tensor<8x16x1x1xf32>):
      %d0 = npu_graph.conv2d %3, %4 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32>
      %d1 = npu_graph.add %d0, %5 : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      %o2_1 = npu_graph.relu %d1 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      %f0 = npu_graph.conv2d %o2_1, %6 : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32>
      %f1_1 = npu_graph.relu %f0 : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
      npu_tile.yield %o2_1, %f1_1 : tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>
    }
    %e = npu_tile.kernel "h..res2"(%f1, %wh, %o2) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 8>, sram_bytes = 27136 : i64, predicted_cycles = 2312 : i64, dram_bytes = 198656 : i64, parts = 4 : i64, part_cycles = array<i64: 5036, 3184, 2902, 2312>, plan = #npu_tile.strip<rows = 4, strips = 8, halo = [1, 1], sram = 27136, in_place = 2>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%7: tensor<1x8x32x32xf32>, %8: tensor<16x8x3x3xf32>, %9: tensor<1x16x32x32xf32>):
      %h0 = npu_graph.conv2d %7, %8 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32>
      %e_1 = npu_graph.add %h0, %9 : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %e_1 : tensor<1x16x32x32xf32>
    }
    func.return %e : tensor<1x16x32x32xf32>
  }
}


// CHECK:      %[[O1:[0-9]+]] = npu_task.alloc {offset = [[AT:[0-9]+]] : i64} : memref<1x16x32x32xf32, "dram">
// CHECK:      npu_task.task "stem..b_relu"
// CHECK:      %{{[0-9]+}} = npu_task.alloc reuse(%[[O1]] : memref<1x16x32x32xf32, "dram">) {offset = [[AT]] : i64} : memref<1x16x32x32xf32, "dram">
// CHECK-NEXT: %{{[0-9]+}} = npu_task.alloc {offset = {{[0-9]+}} : i64} : memref<1x8x32x32xf32, "dram">
// CHECK-NEXT: npu_task.task "d..f_relu"
