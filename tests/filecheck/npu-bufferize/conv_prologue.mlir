// RUN: %opt %s -p npu-tile,npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// A conv with a prologue (npu-fuse's conv-prologue): each loaded input tile goes
// through the multiply-add-relu in place in SRAM, with the per-channel operands
// loaded for the same input channels, before the conv consumes it. 4 KiB of SRAM
// forces two reduction steps over the input channels.
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
// CHECK:        %[[M:.*]] = npu_task.sram {offset = 1536 : i64} : memref<1x8x1x1xf32, "sram">
// CHECK-NEXT:   %[[A:.*]] = npu_task.sram {offset = 1600 : i64} : memref<1x8x1x1xf32, "sram">
// CHECK:        scf.for
// CHECK:          npu_dma.copy %{{.*}} -> %[[X]]
// CHECK:          npu_dma.copy %{{.*}} -> %[[M]]
// CHECK:          npu_dma.copy %{{.*}} -> %[[A]]
// CHECK:          npu_compute.eltwise mul %[[X]], %[[M]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise add %[[X]], %[[A]] -> %[[X]]
// CHECK-NEXT:     npu_compute.eltwise relu %[[X]] -> %[[X]]
// CHECK:          scf.if
// CHECK-NEXT:       npu_compute.conv2d %[[X]]
