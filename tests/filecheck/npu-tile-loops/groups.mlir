// RUN: %opt %s --split-input-file -p npu-tile-loops | filecheck %s
// RUN: %opt %s --split-input-file -p npu-tile-loops,npu-bufferize | filecheck %s --check-prefix=BUF

// A layer group's body gets its DMA order: each input is loaded whole by an
// `npu_tile.load` (no loop) placed where the group's schedule issues it, at most
// dma_channels loads ahead of the op that needs it. With one channel the third
// weight is issued only after the first matmul; npu-bufferize follows that order
// and waits for each load just before the first op computing from it.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, dma_channels = 1>} {
  func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<64x64xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<64x64xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<64x64xf32>
    %y = npu_tile.kernel "fc1..fc3"(%x, %w1, %w2, %w3) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 52224, offsets = [49152, 0, 16384, 32768, 50176, 51200, 49152]>} : (tensor<4x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%0: tensor<4x64xf32>, %1: tensor<64x64xf32>, %2: tensor<64x64xf32>, %3: tensor<64x64xf32>):
      %a = npu_graph.matmul %0, %1 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      %b = npu_graph.matmul %a, %2 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      %c = npu_graph.matmul %b, %3 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      npu_tile.yield %c : tensor<4x64xf32>
    }
    func.return %y : tensor<4x64xf32>
  }
}
// CHECK:      ^bb0(%0: tensor<4x64xf32>, %1: tensor<64x64xf32>, %2: tensor<64x64xf32>, %3: tensor<64x64xf32>):
// CHECK-NEXT:   %[[X:.*]] = npu_tile.load %0()[0, 0] sizes [4, 64] : tensor<4x64xf32>
// CHECK-NEXT:   %[[W1:.*]] = npu_tile.load %1()[0, 0] sizes [64, 64] : tensor<64x64xf32>
// CHECK-NEXT:   %[[W2:.*]] = npu_tile.load %2()[0, 0] sizes [64, 64] : tensor<64x64xf32>
// CHECK-NEXT:   %[[A:.*]] = npu_graph.matmul %[[X]], %[[W1]]
// CHECK-NEXT:   %[[W3:.*]] = npu_tile.load %3()[0, 0] sizes [64, 64] : tensor<64x64xf32>
// CHECK-NEXT:   %[[B:.*]] = npu_graph.matmul %[[A]], %[[W2]]
// CHECK-NEXT:   %[[C:.*]] = npu_graph.matmul %[[B]], %[[W3]]
// CHECK-NEXT:   npu_tile.yield %[[C]]

// BUF:      npu_task.task "fc1..fc3"
// BUF:        %[[TX:.*]] = npu_dma.copy
// BUF-NEXT:   %[[SW1:.*]] = npu_task.sram {offset = 0 : i64, value = 1 : i64}
// BUF-NEXT:   %[[TW1:.*]] = npu_dma.copy %{{.*}} -> %[[SW1]]
// BUF-NEXT:   %[[SW2:.*]] = npu_task.sram {offset = 16384 : i64, value = 2 : i64}
// BUF-NEXT:   %[[TW2:.*]] = npu_dma.copy %{{.*}} -> %[[SW2]]
// BUF-NEXT:   npu_dma.wait %[[TX]]
// BUF-NEXT:   npu_dma.wait %[[TW1]]
// BUF-NEXT:   %[[SA:.*]] = npu_task.sram {offset = 50176 : i64, value = 3 : i64}
// BUF-NEXT:   npu_compute.matmul %{{.*}}, %[[SW1]] -> %[[SA]]
// BUF-NEXT:   %[[SW3:.*]] = npu_task.sram {offset = 32768 : i64, value = 4 : i64}
// BUF-NEXT:   %[[TW3:.*]] = npu_dma.copy %{{.*}} -> %[[SW3]]
// BUF-NEXT:   npu_dma.wait %[[TW2]]
// BUF-NEXT:   %[[SB:.*]] = npu_task.sram {offset = 51200 : i64, value = 5 : i64}
// BUF-NEXT:   npu_compute.matmul %[[SA]], %[[SW2]] -> %[[SB]]
// BUF-NEXT:   npu_dma.wait %[[TW3]]
// BUF-NEXT:   %[[SC:.*]] = npu_task.sram {offset = 49152 : i64, value = 6 : i64}
// BUF-NEXT:   npu_compute.matmul %[[SB]], %[[SW3]] -> %[[SC]]
// BUF-NEXT:   npu_dma.copy %[[SC]]

// -----

// Two channels: every load goes out before the first matmul.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, dma_channels = 2>} {
  func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<64x64xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<64x64xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<64x64xf32>
    %y = npu_tile.kernel "fc1..fc3"(%x, %w1, %w2, %w3) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 52224, offsets = [49152, 0, 16384, 32768, 50176, 51200, 49152]>} : (tensor<4x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%0: tensor<4x64xf32>, %1: tensor<64x64xf32>, %2: tensor<64x64xf32>, %3: tensor<64x64xf32>):
      %a = npu_graph.matmul %0, %1 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      %b = npu_graph.matmul %a, %2 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      %c = npu_graph.matmul %b, %3 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      npu_tile.yield %c : tensor<4x64xf32>
    }
    func.return %y : tensor<4x64xf32>
  }
}
// CHECK:      npu_tile.load %0
// CHECK-NEXT: npu_tile.load %1
// CHECK-NEXT: npu_tile.load %2
// CHECK-NEXT: npu_tile.load %3
// CHECK-NEXT: npu_graph.matmul
