// RUN: %opt %s -p npu-tile-loops,npu-bufferize | filecheck %s

// A conv without a prologue whose input window stays put (the output channels are
// the only loop that iterates): its input is loaded once, into one slot, before the
// steps, though the kernel is double buffered; the weights alternate between two
// slots. (A conv with a prologue keeps loading its input every step:
// conv_prologue.mlir.) Four 1 KiB buffers: two weight slots, the input, the output tile.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x4x4xf32>) -> tensor<1x64x4x4xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<64x16x1x1xf32>
    %y = npu_tile.kernel "conv"(%x, %w) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 16, 4, 4, 16>, grid = array<i64: 1, 4, 1, 1, 1>, double_buffer = true} : (tensor<1x16x4x4xf32>, tensor<64x16x1x1xf32>) -> tensor<1x64x4x4xf32> {
    ^bb0(%0: tensor<1x16x4x4xf32>, %1: tensor<64x16x1x1xf32>):
      %c = npu_graph.conv2d %0, %1 : (tensor<1x16x4x4xf32>, tensor<64x16x1x1xf32>) -> tensor<1x64x4x4xf32>
      npu_tile.yield %c : tensor<1x64x4x4xf32>
    }
    func.return %y : tensor<1x64x4x4xf32>
  }
}
// CHECK:      npu_task.task "conv"
// CHECK:        %[[W0:.*]] = npu_task.sram {offset = 0 : i64} : memref<16x16x1x1xf32, "sram">
// CHECK-NEXT:   %[[W1:.*]] = npu_task.sram {offset = 1024 : i64} : memref<16x16x1x1xf32, "sram">
// CHECK-NEXT:   %[[X:.*]] = npu_task.sram {offset = 2048 : i64} : memref<1x16x4x4xf32, "sram">
// CHECK-NEXT:   npu_task.sram {offset = 3072 : i64} : memref<1x16x4x4xf32, "sram">
// CHECK:        %[[TX:.*]] = npu_dma.copy %{{.*}} -> %[[X]]
// CHECK:        scf.for
// CHECK-NOT:      -> %[[X]]
// CHECK:          npu_dma.wait %[[TX]]
// CHECK-NEXT:     npu_compute.conv2d %[[X]]
