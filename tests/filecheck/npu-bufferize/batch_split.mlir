// RUN: %opt %s -p npu-tile,npu-layer-group,npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir
// RUN: npu-run %s --check --sanitize | filecheck %s --check-prefix=EXEC
// RUN: npu-run %s -p 'npu-tile,npu-layer-group,npu-tile-loops,npu-bufferize,npu-schedule{max-cores=2},npu-task-canonicalize,npu-dma-order,npu-events,npu-prefetch,npu-memplan' --check --sanitize | filecheck %s --check-prefix=EXEC

// A batch-split group (4 slices of 2 images: npu-layer-group/batch_split.mlir) becomes
// one task over its slices [lo, hi): its SRAM buffers (one slice's) are declared in
// the task, then an scf.for loads rows 2i.. of %x and the packed weights, computes,
// stores rows 2i.. of the result and waits for the store before the next slice
// reuses the SRAM. npu-schedule gives each core one slice, or two with max-cores=2
// (the loop runs twice); both match the reference under the memory sanitizer.
builtin.module {
  func.func @main(%x: tensor<8x1x28x28xf32>) -> tensor<8x6x14x14xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.04> : tensor<6x1x5x5xf32>} : tensor<6x1x5x5xf32>
    %b = npu_graph.constant {value = dense<-0.1> : tensor<6xf32>} : tensor<6xf32>
    %c = npu_graph.conv2d %x, %w, %b {pads = array<i64: 2, 2, 2, 2>} : (tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>) -> tensor<8x6x28x28xf32> loc("conv")
    %r = npu_graph.relu %c : (tensor<8x6x28x28xf32>) -> tensor<8x6x28x28xf32> loc("relu")
    %p = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<8x6x28x28xf32>) -> tensor<8x6x14x14xf32> loc("pool")
    func.return %p : tensor<8x6x14x14xf32>
  }
}
// CHECK:      npu_task.task "conv..pool" attributes {core = 0 : i64, range = array<i64: 0, 4>, {{.*}}parts = 4 : i64, part_cycles = array<i64: {{.*}}>} {
// CHECK-NEXT: ^{{.*}}(%[[LO:.*]]: index, %[[HI:.*]]: index):
// CHECK:        %[[C0:.*]] = arith.constant 0 : index
// CHECK:        %[[C2:.*]] = arith.constant 2 : index
// CHECK:        %[[SX:.*]] = npu_task.sram {{.*}} : memref<2x1x28x28xf32, "sram">
// CHECK:        %[[SP:.*]] = npu_task.sram {{.*}} : memref<2x6x14x14xf32, "sram">
// CHECK-NEXT:   scf.for %[[I:.*]] = %[[LO]] to %[[HI]] step %{{.*}} {
// CHECK-NEXT:     %[[ROW:.*]] = arith.muli %[[I]], %[[C2]] : index
// CHECK-NEXT:     %[[TX:.*]] = npu_dma.copy %{{.*}}[%[[ROW]], %[[C0]], %[[C0]], %[[C0]]] -> %[[SX]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]] {sizes = array<i64: 2, 1, 28, 28>} : memref<8x1x28x28xf32, "dram"> -> memref<2x1x28x28xf32, "sram">
// CHECK:          npu_compute.conv2d %[[SX]]
// CHECK:          npu_compute.pool max %{{.*}} -> %[[SP]]
// CHECK-NEXT:     %[[TY:.*]] = npu_dma.copy %[[SP]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]] -> %{{.*}}[%[[ROW]], %[[C0]], %[[C0]], %[[C0]]] {sizes = array<i64: 2, 6, 14, 14>} : memref<2x6x14x14xf32, "sram"> -> memref<8x6x14x14xf32, "dram">
// CHECK-NEXT:     npu_dma.wait %[[TY]]
// CHECK-NEXT:   }

// EXEC: check: ok vs numpy float64 reference
