// RUN: %opt %s -p npu-tile-loops,npu-bufferize | filecheck %s

// The model returns a reshape of a kernel's result: the kernel stores straight into
// the output argument through a view of it, and no copy task follows.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x16xf32>) -> tensor<64xf32> {
    %r = npu_tile.kernel "act"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 16>, grid = array<i64: 1, 1>, double_buffer = true, sram_bytes = 768 : i64, predicted_cycles = 405 : i64, dram_bytes = 512 : i64, parts = 1 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%0: tensor<4x16xf32>):
      %r_1 = npu_graph.relu %0 : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("act")
      npu_tile.yield %r_1 : tensor<4x16xf32>
    } loc("act")
    %f = npu_tile.kernel "flat"(%r) view {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64} : (tensor<4x16xf32>) -> tensor<64xf32> {
    ^bb0(%1: tensor<4x16xf32>):
      %f_1 = npu_graph.reshape %1 : (tensor<4x16xf32>) -> tensor<64xf32> loc("flat")
      npu_tile.yield %f_1 : tensor<64xf32>
    } loc("flat")
    func.return %f : tensor<64xf32>
  }
}

// CHECK:      func.func @main(%[[X:.*]]: memref<4x16xf32, "dram">, %[[Y:.*]]: memref<64xf32, "dram">) {
// CHECK-NEXT:   %[[V:.*]] = npu_task.view %[[Y]] : memref<64xf32, "dram"> to memref<4x16xf32, "dram">
// CHECK-NOT:    npu_task.alloc
// CHECK:        npu_task.task "act"
// CHECK:          npu_dma.copy %{{.*}} -> %[[V]]
// CHECK-NOT:    npu_task.task
// CHECK:        func.return
