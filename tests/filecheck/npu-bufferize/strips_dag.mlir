// RUN: %opt %s -p npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// A fire module as a strip group (npu-layer-group/strips_dag.mlir): strips of 4
// pooled rows = 9 concat rows; the 3x3 branch needs 11 input rows, which is what a
// strip loads. The 1x1 branch reads the middle 9 of them (pads -1 top and bottom crop
// the strip), each branch computes into its channel range of the concat's strip
// buffer (bytes 4224.. and 4224 + 8*9*16*4 = 8832..: the concat moves nothing), the
// concat's rows outside the tensor are masked to -3.4e38 for the pool - in strip 0
// only (rows from 8s - 1; the last strip's rows end at 16). The relus stay before the
// pool here: the pool reads the concat, not a conv's relu (unlike strips.mlir).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x4x16x16xf32>) -> tensor<1x16x8x8xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<8x4x1x1xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<8x4x3x3xf32>
    %p = npu_tile.kernel "e1..pool"(%x, %w1, %w3) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, double_buffer = false, sram_bytes = 15488 : i64, predicted_cycles = 910 : i64, dram_bytes = 11152 : i64, parts = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [2, 1], sram = 15488>} : (tensor<1x4x16x16xf32>, tensor<8x4x1x1xf32>, tensor<8x4x3x3xf32>) -> tensor<1x16x8x8xf32> {
    ^bb0(%0: tensor<1x4x16x16xf32>, %1: tensor<8x4x1x1xf32>, %2: tensor<8x4x3x3xf32>):
      %a = npu_graph.conv2d %0, %1 : (tensor<1x4x16x16xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x16x16xf32> loc("e1")
      %ar = npu_graph.relu %a : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("e1_relu")
      %b = npu_graph.conv2d %0, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x16x16xf32> loc("e3")
      %br = npu_graph.relu %b : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("e3_relu")
      %c = npu_graph.concat %ar, %br {axis = 1 : i64} : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x16x16x16xf32> loc("cat")
      %p_1 = npu_graph.maxpool %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32> loc("pool")
      npu_tile.yield %p_1 : tensor<1x16x8x8xf32>
    } loc(fused["e1", "e1_relu", "e3", "e3_relu", "cat", "pool"])
    func.return %p : tensor<1x16x8x8xf32>
  }
}

// CHECK:      npu_task.task "e1..pool"
// CHECK:        %[[SW1:.*]] = npu_task.sram {{.*}} : memref<8x4x1x1xf32, "sram">
// CHECK:        %[[SW3:.*]] = npu_task.sram {{.*}} : memref<8x4x3x3xf32, "sram">
// CHECK:        %[[SX:.*]] = npu_task.sram {{.*}} : memref<1x4x11x16xf32, "sram">
// CHECK-NEXT:   %[[SM:.*]] = npu_task.sram {{.*}} : memref<1x1x9x1xf32, "sram">
// CHECK-NEXT:   %[[SNB:.*]] = npu_task.sram {{.*}} : memref<1x1x9x1xf32, "sram">
// CHECK-NEXT:   %[[SA:.*]] = npu_task.sram {offset = 4224 : i64, value = {{[0-9]+}} : i64} : memref<1x8x9x16xf32, "sram">
// CHECK-NEXT:   %[[SB:.*]] = npu_task.sram {offset = 8832 : i64, value = {{[0-9]+}} : i64} : memref<1x8x9x16xf32, "sram">
// CHECK-NEXT:   %[[SC:.*]] = npu_task.sram {offset = 4224 : i64, value = {{[0-9]+}} : i64} : memref<1x16x9x16xf32, "sram">
// CHECK-NEXT:   %[[SP:.*]] = npu_task.sram {{.*}} : memref<1x16x4x8xf32, "sram">
// CHECK:        scf.for
// CHECK:          npu_dma.copy %{{.*}} -> %[[SX]]{{.*}} {sizes = array<i64: 1, 4, 11, 16>, pad_value = 0.000000e+00 : f32}
// CHECK:          npu_compute.conv2d %[[SX]], %[[SW1]] -> %[[SA]] {{.*}}pads = array<i64: -1, 0, -1, 0>}
// CHECK-NEXT:     npu_compute.eltwise relu %[[SA]] -> %[[SA]]
// CHECK-NEXT:     npu_compute.conv2d %[[SX]], %[[SW3]] -> %[[SB]] {{.*}}pads = array<i64: 0, 1, 0, 1>}
// CHECK-NEXT:     npu_compute.eltwise relu %[[SB]] -> %[[SB]]
// CHECK-NEXT:     %[[FIRST:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:     scf.if %[[FIRST]] {
// CHECK-NEXT:       npu_compute.eltwise mul %[[SC]], %[[SM]] -> %[[SC]]
// CHECK-NEXT:       npu_compute.eltwise add %[[SC]], %[[SNB]] -> %[[SC]]
// CHECK-NEXT:     }
// CHECK-NEXT:     npu_compute.pool max %[[SC]] -> %[[SP]] {{.*}}pads = array<i64: 0, 1, 0, 1>}
// CHECK:          npu_dma.copy %[[SP]]{{.*}} {sizes = array<i64: 1, 16, 4, 8>, clip}
