// RUN: %opt %s --split-input-file -p npu-bufferize | filecheck %s

// Must not overwrite in place: %a is stored (a group result: its store may still be
// reading the buffer) and %c is read again by the add after the relu.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
    %a, %y = npu_tile.kernel "g"(%x) {kind = "group", loops = "", tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64} : (tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
    ^bb0(%0: tensor<4x64xf32>):
      %a_1 = npu_graph.sigmoid %0 : (tensor<4x64xf32>) -> tensor<4x64xf32>
      %b = npu_graph.relu %a_1 : (tensor<4x64xf32>) -> tensor<4x64xf32>
      %c = npu_graph.neg %b : (tensor<4x64xf32>) -> tensor<4x64xf32>
      %d = npu_graph.relu %c : (tensor<4x64xf32>) -> tensor<4x64xf32>
      %y_1 = npu_graph.add %d, %c : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
      npu_tile.yield %a_1, %y_1 : tensor<4x64xf32>, tensor<4x64xf32>
    }
    func.return %a, %y : tensor<4x64xf32>, tensor<4x64xf32>
  }
}
// CHECK:      npu_compute.eltwise "sigmoid" %{{.*}} -> %[[A:.*]] :
// CHECK:      npu_compute.eltwise "relu" %[[A]] -> %[[B:[^ ]*]] :
// CHECK-NOT:  "relu" %[[A]] -> %[[A]]
// The neg may overwrite %b (read last there, not stored).
// CHECK:      npu_compute.eltwise "neg" %[[B]] -> %[[B]] :
// CHECK:      npu_compute.eltwise "relu" %[[B]] -> %[[D:[^ ]*]] :
// CHECK-NOT:  "relu" %[[B]] -> %[[B]]
// CHECK:      npu_compute.eltwise "add" %[[D]], %[[B]] -> %[[D]] :
