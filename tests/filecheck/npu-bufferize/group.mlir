// RUN: %opt %s -p npu-tile-loops,npu-bufferize | filecheck %s

// A layer group becomes one task: the group's inputs are loaded whole into SRAM
// (in order of first use, up to dma_channels loads ahead of the op that needs
// them), each graph op runs once on whole SRAM buffers, a buffer whose value is
// dead is reused (the second matmul's result lands where w1 was), an elementwise op
// overwrites an operand it reads last, and only the group's results are stored to DRAM.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<64x64xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<64x64xf32>
    %h, %y = npu_tile.kernel "fc1..residual"(%x, %w1, %w2) group {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 34816 : i64, predicted_cycles = 764 : i64, dram_bytes = 35840 : i64, parts = 1 : i64, plan = #npu_tile.group<sram = 34816, offsets = [32768, 0, 16384, 33792, 33792, 0, 0], in_place = [1, 3]>} : (tensor<4x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
    ^bb0(%0: tensor<4x64xf32>, %1: tensor<64x64xf32>, %2: tensor<64x64xf32>):
      %a = npu_graph.matmul %0, %1 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      %h_1 = npu_graph.relu %a : (tensor<4x64xf32>) -> tensor<4x64xf32>
      %b = npu_graph.matmul %h_1, %2 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
      %y_1 = npu_graph.add %b, %0 : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
      npu_tile.yield %h_1, %y_1 : tensor<4x64xf32>, tensor<4x64xf32>
    }
    func.return %y, %h : tensor<4x64xf32>, tensor<4x64xf32>
  }
}
// CHECK:      func.func @main(%[[X:.*]]: memref<4x64xf32, "dram">, %[[Y:.*]]: memref<4x64xf32, "dram">, %[[H:.*]]: memref<4x64xf32, "dram">)
// CHECK:        %[[W1:.*]] = npu_task.weight "w1"
// CHECK:        %[[W2:.*]] = npu_task.weight "w2"
// CHECK-NOT:    npu_task.alloc
// CHECK:        npu_task.task "fc1..residual" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 764 : i64
// CHECK:          %[[SX:.*]] = npu_task.sram {offset = [[OX:[0-9]+]] : i64, value = 0 : i64} : memref<4x64xf32, "sram">
// CHECK-NEXT:     %[[TX:.*]] = npu_dma.copy %[[X]]{{.*}} -> %[[SX]]
// CHECK-NEXT:     %[[SW1:.*]] = npu_task.sram {offset = 0 : i64, value = 1 : i64} : memref<64x64xf32, "sram">
// CHECK-NEXT:     %[[TW1:.*]] = npu_dma.copy %[[W1]]{{.*}} -> %[[SW1]]
// CHECK-NEXT:     %[[SW2:.*]] = npu_task.sram {offset = 16384 : i64, value = 2 : i64} : memref<64x64xf32, "sram">
// CHECK-NEXT:     %[[TW2:.*]] = npu_dma.copy %[[W2]]{{.*}} -> %[[SW2]]
// CHECK-NEXT:     npu_dma.wait %[[TX]]
// CHECK-NEXT:     npu_dma.wait %[[TW1]]
// CHECK-NEXT:     %[[SA:.*]] = npu_task.sram {offset = 33792 : i64, value = 3 : i64} : memref<4x64xf32, "sram">
// CHECK-NEXT:     npu_compute.matmul %[[SX]], %[[SW1]] -> %[[SA]]
// The relu overwrites the matmul result it consumes last (in place in SRAM): a new
// value at the same bytes.
// CHECK-NEXT:     %[[SH:.*]] = npu_task.sram {offset = 33792 : i64, value = 4 : i64} : memref<4x64xf32, "sram">
// CHECK-NEXT:     npu_compute.eltwise relu %[[SA]] -> %[[SH]]
// CHECK-NEXT:     npu_dma.copy %[[SH]]{{.*}} -> %[[H]]
// CHECK-NEXT:     npu_dma.wait %[[TW2]]
// The second matmul's result lands where w1 was; the add overwrites it in place.
// CHECK-NEXT:     %[[SB:.*]] = npu_task.sram {offset = 0 : i64, value = 5 : i64} : memref<4x64xf32, "sram">
// CHECK-NEXT:     npu_compute.matmul %[[SH]], %[[SW2]] -> %[[SB]]
// CHECK-NEXT:     %[[SY:.*]] = npu_task.sram {offset = 0 : i64, value = 6 : i64} : memref<4x64xf32, "sram">
// CHECK-NEXT:     npu_compute.eltwise add %[[SB]], %[[SX]] -> %[[SY]] :
// CHECK-NEXT:     npu_dma.copy %[[SY]]{{.*}} -> %[[Y]]
// CHECK-NEXT:   }
