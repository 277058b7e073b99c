// RUN: %opt %s -p npu-bufferize | filecheck %s

// The layer-group patterns on a materialised group (npu-tile-loops output):
// GroupLoadToCopy copies each load into the buffer the #npu_tile.group plan places
// (offsets: the inputs, then each op's result) and waits before the first op computing
// from it; StageGroupOp stages the conv and the gemm (their biases as adds after
// them, the conv's viewed [1, C, 1, 1], the same value); GroupViewToBuffer makes the
// reshape a view of the conv's buffer, no copy, no compute, stored because returned.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<1x4x8x8xf32>) -> (tensor<1x256xf32>, tensor<1x16xf32>) {
    %w = npu_graph.constant {weight = "w"} : tensor<4x4x3x3xf32>
    %b = npu_graph.constant {weight = "b"} : tensor<4xf32>
    %fw = npu_graph.constant {weight = "fw"} : tensor<16x256xf32>
    %fb = npu_graph.constant {weight = "fb"} : tensor<16xf32>
    %f, %g = npu_tile.kernel "conv2d..gemm"(%x, %w, %b, %fw, %fb) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 19136, offsets = [16384, 18432, 19072, 0, 19008, 17408, 17408, 16384]>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>, tensor<16x256xf32>, tensor<16xf32>) -> (tensor<1x256xf32>, tensor<1x16xf32>) {
    ^bb0(%0: tensor<1x4x8x8xf32>, %1: tensor<4x4x3x3xf32>, %2: tensor<4xf32>, %3: tensor<16x256xf32>, %4: tensor<16xf32>):
      %5 = npu_tile.load %0()[0, 0, 0, 0] sizes [1, 4, 8, 8] : tensor<1x4x8x8xf32>
      %6 = npu_tile.load %1()[0, 0, 0, 0] sizes [4, 4, 3, 3] : tensor<4x4x3x3xf32>
      %7 = npu_tile.load %2()[0] sizes [4] : tensor<4xf32>
      %c = npu_graph.conv2d %5, %6, %7 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
      %8 = npu_tile.load %3()[0, 0] sizes [16, 256] : tensor<16x256xf32>
      %9 = npu_tile.load %4()[0] sizes [16] : tensor<16xf32>
      %f_1 = npu_graph.reshape %c : (tensor<1x4x8x8xf32>) -> tensor<1x256xf32>
      %g_1 = npu_graph.gemm %f_1, %8, %9 {trans_b = true} : (tensor<1x256xf32>, tensor<16x256xf32>, tensor<16xf32>) -> tensor<1x16xf32>
      npu_tile.yield %f_1, %g_1 : tensor<1x256xf32>, tensor<1x16xf32>
    }
    func.return %f, %g : tensor<1x256xf32>, tensor<1x16xf32>
  }
}
// CHECK:      func.func @main(%[[X:.*]]: memref<1x4x8x8xf32, "dram">, %[[F:.*]]: memref<1x256xf32, "dram">, %[[G:.*]]: memref<1x16xf32, "dram">)
// CHECK:      %[[SX:.*]] = npu_task.sram {offset = 16384 : i64, value = 0 : i64} : memref<1x4x8x8xf32, "sram">
// CHECK-NEXT: %[[TX:.*]] = npu_dma.copy %[[X]]{{.*}} -> %[[SX]]
// CHECK-NEXT: %[[SW:.*]] = npu_task.sram {offset = 18432 : i64, value = 1 : i64}
// CHECK-NEXT: %[[TW:.*]] = npu_dma.copy %{{.*}} -> %[[SW]]
// CHECK-NEXT: %[[SB:.*]] = npu_task.sram {offset = 19072 : i64, value = 2 : i64} : memref<4xf32, "sram">
// CHECK-NEXT: %[[TB:.*]] = npu_dma.copy %{{.*}} -> %[[SB]]
// CHECK-NEXT: npu_dma.wait %[[TX]]
// CHECK-NEXT: npu_dma.wait %[[TW]]
// CHECK-NEXT: npu_dma.wait %[[TB]]
// CHECK-NEXT: %[[SC:.*]] = npu_task.sram {offset = 17408 : i64, value = 3 : i64} : memref<1x4x8x8xf32, "sram">
// CHECK-NEXT: npu_compute.conv2d %[[SX]], %[[SW]] -> %[[SC]] {{.*}}pads = array<i64: 1, 1, 1, 1>
// CHECK-NEXT: %[[SB4:.*]] = npu_task.sram {offset = 19072 : i64, value = 2 : i64} : memref<1x4x1x1xf32, "sram">
// CHECK-NEXT: npu_compute.eltwise add %[[SC]], %[[SB4]] -> %[[SC]]
// CHECK-NEXT: %[[SFW:.*]] = npu_task.sram {offset = 0 : i64, value = 4 : i64}
// CHECK-NEXT: %[[TFW:.*]] = npu_dma.copy %{{.*}} -> %[[SFW]]
// CHECK-NEXT: %[[SFB:.*]] = npu_task.sram {offset = 19008 : i64, value = 5 : i64}
// CHECK-NEXT: %[[TFB:.*]] = npu_dma.copy %{{.*}} -> %[[SFB]]
// CHECK-NEXT: %[[SF:.*]] = npu_task.sram {offset = 17408 : i64, value = 3 : i64} : memref<1x256xf32, "sram">
// CHECK-NEXT: npu_dma.copy %[[SF]]{{.*}} -> %[[F]]
// CHECK-NEXT: npu_dma.wait %[[TFW]]
// CHECK-NEXT: npu_dma.wait %[[TFB]]
// CHECK-NEXT: %[[SG:.*]] = npu_task.sram {offset = 16384 : i64, value = 6 : i64} : memref<1x16xf32, "sram">
// CHECK-NEXT: npu_compute.matmul %[[SF]], %[[SFW]] -> %[[SG]] {trans_b}
// CHECK-NEXT: npu_compute.eltwise add %[[SG]], %[[SFB]] -> %[[SG]]
// CHECK-NEXT: npu_dma.copy %[[SG]]{{.*}} -> %[[G]]
// CHECK-NEXT: }
