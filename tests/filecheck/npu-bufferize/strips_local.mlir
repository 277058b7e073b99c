// RUN: %opt %s -p npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// The strip group of npu-layer-group/strips_dag.mlir whose add reads %a at the rows of its
// output while the 3x3 conv reads %a with a halo: %a's strip buffer holds 7 rows, the add
// needs the middle 5, copied out of it (SRAM to SRAM) before the add reads them.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, cube = 16x16x16, vector_lanes = 64, sram_bytes = 16384, dram_bw = 128, dma_latency = 200, dma_channels = 2, event_slots = 64, sync_latency = 100, freq = 1000000000, align = 64>, npu.model_macs = 163840 : i64, npu.model_min_bytes = 12800 : i64, npu.kernel_min_bytes = 70144 : i64, npu.fusion_floor_bytes = 12800 : i64} {
  func.func @main(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<8x8x1x1xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<8x8x3x3xf32>
    %p = npu_tile.kernel "c1..pool"(%x, %w1, %w3) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, double_buffer = false, sram_bytes = 14976 : i64, predicted_cycles = 1114 : i64, dram_bytes = 19216 : i64, parts = 4 : i64, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [2, 1], sram = 15040>} : (tensor<1x8x16x16xf32>, tensor<8x8x1x1xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32> {
    ^bb0(%0: tensor<1x8x16x16xf32>, %1: tensor<8x8x1x1xf32>, %2: tensor<8x8x3x3xf32>):
      %a = npu_graph.conv2d %0, %1 : (tensor<1x8x16x16xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x16x16xf32>
      %b = npu_graph.conv2d %a, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
      %s = npu_graph.add %a, %b : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
      %p_1 = npu_graph.maxpool %s {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32>
      npu_tile.yield %p_1 : tensor<1x8x8x8xf32>
    }
    func.return %p : tensor<1x8x8x8xf32>
  }
}

// CHECK:       npu_compute.conv2d %[[X:.*]], %{{.*}} -> %[[A:.*]] {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<1x8x7x16xf32, "sram">
// CHECK:       npu_compute.conv2d %[[A]], %{{.*}} -> %[[B:.*]] {{{.*}}pads = array<i64: 0, 1, 0, 1>} : memref<1x8x7x16xf32, "sram">, memref<8x8x3x3xf32, "sram"> -> memref<1x8x5x16xf32, "sram">
// CHECK-NEXT:  %[[COPY:.*]] = npu_dma.copy %[[A]][%[[C0:.*]], %[[C0]], %[[C1:.*]], %[[C0]]] -> %[[MID:.*]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]] {sizes = array<i64: 1, 8, 5, 16>} : memref<1x8x7x16xf32, "sram"> -> memref<1x8x5x16xf32, "sram">
// CHECK-NEXT:  npu_dma.wait %[[COPY]]
// CHECK-NEXT:  npu_compute.eltwise add %[[MID]], %[[B]] -> %{{[0-9]+}}
