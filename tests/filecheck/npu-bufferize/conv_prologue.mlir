// RUN: %opt %s --split-input-file -p npu-tile,npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// A conv with a prologue (npu-fuse's conv-prologue): each loaded input tile goes
// through the multiply-add-relu in place in SRAM before the conv consumes it.
// 16 input channels in 4 KiB, in two input-channel tiles of 8 (the reduction loop):
// a step would load four tiles on two DMA channels, so the per-channel operands'
// blocks (64 bytes each) load as one, their whole run of 16 channels once per task
// before the steps (awaited in the first step), and each step reads its block through
// an `npu_task.view` at the input-channel index; the input tile, rewritten by the
// prologue, is loaded each step.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 4096>} {
  func.func @main(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
    %m = npu_graph.constant {value = dense<2.000000e+00> : tensor<16x1x1xf32>} : tensor<16x1x1xf32>
    %a = npu_graph.constant {value = dense<-1.000000e+00> : tensor<16x1x1xf32>} : tensor<16x1x1xf32>
    %w = npu_graph.constant {value = dense<5.000000e-01> : tensor<16x16x1x1xf32>} : tensor<16x16x1x1xf32>
    %c = npu_graph.fused(%x, %m, %a, %w) {kernel = "conv", rule = "conv-prologue"} : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32> {
    ^bb0(%0: tensor<1x16x8x8xf32>, %1: tensor<16x1x1xf32>, %2: tensor<16x1x1xf32>, %3: tensor<16x16x1x1xf32>):
      %s = npu_graph.mul %0, %1 : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
      %t = npu_graph.add %s, %2 : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
      %r = npu_graph.relu %t : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
      %c_1 = npu_graph.conv2d %r, %3 : (tensor<1x16x8x8xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x8x8xf32> loc("conv")
      npu_graph.yield %c_1 : tensor<1x16x8x8xf32>
    } loc("conv")
    func.return %c : tensor<1x16x8x8xf32>
  }
}

// CHECK:      npu_task.task "conv"
// CHECK:        %[[X:.*]] = npu_task.sram {offset = 0 : i64} : memref<1x8x4x8xf32, "sram">
// CHECK:        %[[M:.*]] = npu_task.sram {offset = 1536 : i64} : memref<1x16x1x1xf32, "sram">
// CHECK-NEXT:   %[[A:.*]] = npu_task.sram {offset = 1600 : i64} : memref<1x16x1x1xf32, "sram">
// CHECK:        %[[TM:.*]] = npu_dma.copy %{{.*}} -> %[[M]][{{.*}}] {sizes = array<i64: 1, 16, 1, 1>
// CHECK-NEXT:   %[[TA:.*]] = npu_dma.copy %{{.*}} -> %[[A]][{{.*}}] {sizes = array<i64: 1, 16, 1, 1>
// CHECK-NEXT:   scf.for
// CHECK:          %[[CI:.*]] = arith.remui
// CHECK:          npu_dma.copy %{{.*}} -> %[[X]]
// CHECK-NOT:      -> %[[M]]
// CHECK:          npu_dma.wait %[[TM]]
// CHECK-NEXT:     npu_dma.wait %[[TA]]
// CHECK:          %[[MB:.*]] = npu_task.view %[[M]][%[[CI]]] : memref<1x16x1x1xf32, "sram"> to memref<1x8x1x1xf32, "sram">
// CHECK-NEXT:     %[[AB:.*]] = npu_task.view %[[A]][%[[CI]]] : memref<1x16x1x1xf32, "sram"> to memref<1x8x1x1xf32, "sram">
// CHECK-NEXT:     npu_compute.eltwise mul %[[X]], %[[MB]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise add %[[X]], %[[AB]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise relu %[[X]] -> %[[X]]
// CHECK:          npu_compute.conv2d %[[X]]

// -----

// 64 input channels force reduction steps over them (8 channels per step): the
// per-channel operands' blocks follow the input tile's channels; they coalesce as
// above (their whole runs, 256 bytes each, load once before the steps), so a step
// loads only the input and weight tiles.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 4096>} {
  func.func @main(%x: tensor<1x64x8x8xf32>) -> tensor<1x16x8x8xf32> {
    %m = npu_graph.constant {value = dense<2.000000e+00> : tensor<64x1x1xf32>} : tensor<64x1x1xf32>
    %a = npu_graph.constant {value = dense<-1.000000e+00> : tensor<64x1x1xf32>} : tensor<64x1x1xf32>
    %w = npu_graph.constant {value = dense<5.000000e-01> : tensor<16x64x1x1xf32>} : tensor<16x64x1x1xf32>
    %c = npu_graph.fused(%x, %m, %a, %w) {kernel = "conv", rule = "conv-prologue"} : (tensor<1x64x8x8xf32>, tensor<64x1x1xf32>, tensor<64x1x1xf32>, tensor<16x64x1x1xf32>) -> tensor<1x16x8x8xf32> {
    ^bb0(%0: tensor<1x64x8x8xf32>, %1: tensor<64x1x1xf32>, %2: tensor<64x1x1xf32>, %3: tensor<16x64x1x1xf32>):
      %s = npu_graph.mul %0, %1 : (tensor<1x64x8x8xf32>, tensor<64x1x1xf32>) -> tensor<1x64x8x8xf32>
      %t = npu_graph.add %s, %2 : (tensor<1x64x8x8xf32>, tensor<64x1x1xf32>) -> tensor<1x64x8x8xf32>
      %r = npu_graph.relu %t : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32>
      %c_1 = npu_graph.conv2d %r, %3 : (tensor<1x64x8x8xf32>, tensor<16x64x1x1xf32>) -> tensor<1x16x8x8xf32> loc("conv")
      npu_graph.yield %c_1 : tensor<1x16x8x8xf32>
    } loc("conv")
    func.return %c : tensor<1x16x8x8xf32>
  }
}

// CHECK:      npu_task.task "conv"
// CHECK:        %[[X:.*]] = npu_task.sram {offset = 0 : i64} : memref<1x8x4x8xf32, "sram">
// CHECK:        %[[M:.*]] = npu_task.sram {offset = 1536 : i64} : memref<1x64x1x1xf32, "sram">
// CHECK-NEXT:   %[[A:.*]] = npu_task.sram {offset = 1792 : i64} : memref<1x64x1x1xf32, "sram">
// CHECK:        npu_dma.copy %{{.*}} -> %[[M]][{{.*}}] {sizes = array<i64: 1, 64, 1, 1>
// CHECK-NEXT:   npu_dma.copy %{{.*}} -> %[[A]][{{.*}}] {sizes = array<i64: 1, 64, 1, 1>
// CHECK-NEXT:   scf.for
// CHECK:          %[[CI:.*]] = arith.remui
// CHECK-NOT:      -> %[[M]]
// CHECK:          npu_dma.copy %{{.*}} -> %[[X]]
// CHECK:          %[[MB:.*]] = npu_task.view %[[M]][%[[CI]]] : memref<1x64x1x1xf32, "sram"> to memref<1x8x1x1xf32, "sram">
// CHECK-NEXT:     %[[AB:.*]] = npu_task.view %[[A]][%[[CI]]]
// CHECK-NEXT:     npu_compute.eltwise mul %[[X]], %[[MB]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise add %[[X]], %[[AB]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise relu %[[X]] -> %[[X]]
// CHECK:          scf.if
// CHECK-NEXT:       npu_compute.conv2d %[[X]]
