// RUN: %opt %s -p npu-bufferize | filecheck %s

// A layer group returning a view of a loaded input (a prefix slice: bytes of the load's
// buffer, no compute): the view's store reads the loaded bytes, so the load is waited for
// before it, not first before the softplus after it (found by the fuzzer: the store read
// SRAM the load had not written yet, a sanitizer fault).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%in1: tensor<2xf32>) -> (tensor<2xf32>, tensor<1xf32>) {
    %0, %1 = npu_tile.kernel "slice..mish"(%in1) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 128, offsets = [0, 0, 64, 64, 64], in_place = [2, 3]>} : (tensor<2xf32>) -> (tensor<1xf32>, tensor<2xf32>) {
    ^bb0(%2: tensor<2xf32>):
      %3 = npu_tile.load %2()[0] sizes [2] : tensor<2xf32>
      %4 = npu_graph.slice %3 {starts = array<i64: 0>, ends = array<i64: 1>, steps = array<i64: 1>} : (tensor<2xf32>) -> tensor<1xf32>
      %5 = npu_graph.softplus %3 : (tensor<2xf32>) -> tensor<2xf32>
      %6 = npu_graph.tanh %5 : (tensor<2xf32>) -> tensor<2xf32>
      %7 = npu_graph.mul %3, %6 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      npu_tile.yield %4, %7 : tensor<1xf32>, tensor<2xf32>
    }
    func.return %1, %0 : tensor<2xf32>, tensor<1xf32>
  }
}
// CHECK:      %[[SX:.*]] = npu_task.sram {offset = 0 : i64, value = 0 : i64} : memref<2xf32, "sram">
// CHECK-NEXT: %[[TX:.*]] = npu_dma.copy %{{.*}} -> %[[SX]]
// CHECK-NEXT: npu_dma.wait %[[TX]]
// CHECK-NEXT: %[[SV:.*]] = npu_task.sram {offset = 0 : i64, value = 0 : i64} : memref<1xf32, "sram">
// CHECK-NEXT: npu_dma.copy %[[SV]]
// CHECK:      npu_compute.eltwise softplus
