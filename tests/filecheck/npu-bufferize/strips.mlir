// RUN: %opt %s -p npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// A strip group (npu-layer-group/strips.mlir: conv 3x3 + bias + relu + max-pool
// 3x3/2, strips of 3 pooled rows = 7 conv rows = 9 input rows). The task loads the
// weights once, then per strip s in its range, its loads smallest first: the two
// masks of the conv rows (the pool reads rows outside
// the tensor as -inf: x * m + b with m = 0, b = -3.4e38 there) and the input rows
// from 6s - 2 (the DMA pads rows outside with 0); conv and pool padded
// along W only, the masks in place - only in strips 0 and 5, the only ones holding conv
// rows outside the tensor (6s - 2 < 0, 6s + 5 > 32) -, the bias and relu after the pool
// on its 3 rows instead of the conv's 7 (max-pool commutes with both), and the 3
// output rows stored at 3s (clipped past the end). The task keeps the kernel's
// spans on 1..3 cores (`part_cycles`) for npu-schedule.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x32x32xf32>) -> tensor<1x16x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xf32>
    %b = npu_graph.constant {weight = "b"} : tensor<16xf32>
    %p = npu_tile.kernel "conv..pool"(%x, %w, %b) group {loops = ["h"], tile = array<i64: 3>, grid = array<i64: 6>, double_buffer = false, sram_bytes = 31424 : i64, predicted_cycles = 2502 : i64, dram_bytes = 78736 : i64, parts = 3 : i64, part_cycles = array<i64: 5000, 3100, 2502>, plan = #npu_tile.strip<rows = 3, strips = 6, halo = [2, 1], sram = 31424>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32> {
    ^bb0(%0: tensor<1x8x32x32xf32>, %1: tensor<16x8x3x3xf32>, %2: tensor<16xf32>):
      %c = npu_graph.conv2d %0, %1, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x32x32xf32> loc("conv")
      %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("relu")
      %p_1 = npu_graph.maxpool %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32> loc("pool")
      npu_tile.yield %p_1 : tensor<1x16x16x16xf32>
    } loc(fused["conv", "relu", "pool"])
    func.return %p : tensor<1x16x16x16xf32>
  }
}

// CHECK:      %[[W:.*]] = npu_task.weight "w"
// CHECK-NEXT: %[[B:.*]] = npu_task.weight "b"
// CHECK-NEXT: %[[M:.*]] = npu_task.weight "inline1" {value = dense<[{{\[\[}}[0.000000e+00], [1.000000e+00],
// CHECK-SAME:   : memref<1x1x37x1xf32, "dram">
// CHECK-NEXT: %[[NB:.*]] = npu_task.weight "inline2" {value = dense<[{{\[\[}}[-3.40282347e+38], [0.000000e+00],
// CHECK:      npu_task.task "conv..pool" attributes {core = 0 : i64, range = array<i64: 0, 6>
// CHECK-SAME:   parts = 3 : i64, part_cycles = array<i64: 5000, 3100, 2502>}
// CHECK-NEXT: ^{{.*}}(%[[LO:.*]]: index, %[[HI:.*]]: index):
// CHECK-DAG:    %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG:    %[[CM2:.*]] = arith.constant -2 : index
// CHECK-DAG:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:    %[[C5:.*]] = arith.constant 5 : index
// CHECK:        %[[SW:.*]] = npu_task.sram {offset = 0 : i64, value = {{[0-9]+}} : i64} : memref<16x8x3x3xf32, "sram">
// CHECK-NEXT:   npu_dma.copy %[[W]]
// CHECK:        %[[SX:.*]] = npu_task.sram {{.*}} : memref<1x8x9x32xf32, "sram">
// CHECK-NEXT:   %[[SM:.*]] = npu_task.sram {{.*}} : memref<1x1x7x1xf32, "sram">
// CHECK-NEXT:   %[[SNB:.*]] = npu_task.sram {{.*}} : memref<1x1x7x1xf32, "sram">
// CHECK-NEXT:   %[[SC:.*]] = npu_task.sram {{.*}} : memref<1x16x7x32xf32, "sram">
// CHECK-NEXT:   %[[SP:.*]] = npu_task.sram {{.*}} : memref<1x16x3x16xf32, "sram">
// CHECK-NEXT:   %[[SB:.*]] = npu_task.sram {offset = 4608 : i64, value = {{[0-9]+}} : i64} : memref<1x16x1x1xf32, "sram">
// CHECK-NEXT:   scf.for %[[S:.*]] = %[[LO]] to %[[HI]] step
// CHECK-NEXT:     %[[MR:.*]] = arith.muli %[[S]], %[[C6]]
// CHECK-NEXT:     npu_dma.copy %[[M]][%{{.*}}, %{{.*}}, %[[MR]], %{{.*}}] -> %[[SM]]
// CHECK-NEXT:     npu_dma.copy %[[NB]][%{{.*}}, %{{.*}}, %[[MR]], %{{.*}}] -> %[[SNB]]
// CHECK-NEXT:     %[[R6:.*]] = arith.muli %[[S]], %[[C6]]
// CHECK-NEXT:     %[[R:.*]] = arith.addi %[[R6]], %[[CM2]]
// CHECK-NEXT:     npu_dma.copy %{{.*}}[%{{.*}}, %{{.*}}, %[[R]], %{{.*}}] -> %[[SX]]{{.*}} {sizes = array<i64: 1, 8, 9, 32>, pad_value = 0.000000e+00 : f32}
// CHECK:          npu_compute.conv2d %[[SX]], %[[SW]] -> %[[SC]] {{.*}}pads = array<i64: 0, 1, 0, 1>}
// CHECK-NEXT:     %[[FIRST:.*]] = arith.cmpi slt, %[[S]], %[[C1]] : index
// CHECK-NEXT:     %[[LAST:.*]] = arith.cmpi sge, %[[S]], %[[C5]] : index
// CHECK-NEXT:     %[[EDGE:.*]] = arith.ori %[[FIRST]], %[[LAST]] : i1
// CHECK-NEXT:     scf.if %[[EDGE]] {
// CHECK-NEXT:       npu_compute.eltwise mul %[[SC]], %[[SM]] -> %[[SC]]
// CHECK-NEXT:       npu_compute.eltwise add %[[SC]], %[[SNB]] -> %[[SC]]
// CHECK-NEXT:     }
// CHECK-NEXT:     npu_compute.pool max %[[SC]] -> %[[SP]] {{.*}}pads = array<i64: 0, 1, 0, 1>}
// CHECK-NEXT:     npu_compute.eltwise add %[[SP]], %[[SB]] -> %[[SP]]
// CHECK-NEXT:     npu_compute.eltwise relu %[[SP]] -> %[[SP]]
// CHECK-NEXT:     %[[O:.*]] = arith.muli %[[S]], %[[C3]]
// CHECK-NEXT:     npu_dma.copy %[[SP]]{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}, %[[O]], %{{.*}}] {sizes = array<i64: 1, 16, 3, 16>, clip}
