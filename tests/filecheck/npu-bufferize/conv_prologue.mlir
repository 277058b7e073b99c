// RUN: %opt %s --split-input-file -p npu-tile,npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// A conv with a prologue (npu-fuse's conv-prologue): each loaded input tile goes
// through the multiply-add-relu in place in SRAM before the conv consumes it.
// 16 input channels in 4 KiB: one input-channel tile, so the per-channel operands'
// window never moves: they are loaded once per task, before the steps, and awaited
// in the first step (the input tile, rewritten by the prologue, is loaded each step).
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
// CHECK:        %[[X:.*]] = npu_task.sram {offset = 0 : i64} : memref<1x16x4x8xf32, "sram">
// CHECK:        %[[M:.*]] = npu_task.sram {offset = 2560 : i64} : memref<1x16x1x1xf32, "sram">
// CHECK-NEXT:   %[[A:.*]] = npu_task.sram {offset = 2624 : i64} : memref<1x16x1x1xf32, "sram">
// CHECK:        %[[TM:.*]] = npu_dma.copy %{{.*}} -> %[[M]]
// CHECK-NEXT:   %[[TA:.*]] = npu_dma.copy %{{.*}} -> %[[A]]
// CHECK-NEXT:   scf.for
// CHECK:          npu_dma.copy %{{.*}} -> %[[X]]
// CHECK-NOT:      -> %[[M]]
// CHECK:          npu_dma.wait %[[TM]]
// CHECK-NEXT:     npu_dma.wait %[[TA]]
// CHECK:          npu_compute.eltwise mul %[[X]], %[[M]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise add %[[X]], %[[A]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise relu %[[X]] -> %[[X]]
// CHECK-NEXT:     npu_compute.conv2d %[[X]]

// -----

// 64 input channels force reduction steps over them (8 channels per step): the
// per-channel operands are loaded every step for the same input channels as the
// input tile (issued first: a step issues its loads smallest first).
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
// CHECK:        %[[M:.*]] = npu_task.sram {offset = 1536 : i64} : memref<1x8x1x1xf32, "sram">
// CHECK-NEXT:   %[[A:.*]] = npu_task.sram {offset = 1600 : i64} : memref<1x8x1x1xf32, "sram">
// CHECK:        scf.for
// CHECK:          npu_dma.copy %{{.*}} -> %[[M]]
// CHECK:          npu_dma.copy %{{.*}} -> %[[A]]
// CHECK:          npu_dma.copy %{{.*}} -> %[[X]]
// CHECK:          npu_compute.eltwise mul %[[X]], %[[M]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise add %[[X]], %[[A]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise relu %[[X]] -> %[[X]]
// CHECK:          scf.if
// CHECK-NEXT:       npu_compute.conv2d %[[X]]
