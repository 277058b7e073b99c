// RUN: %opt %s --split-input-file -p npu-tile-loops,npu-bufferize | filecheck %s

// Must not overwrite in place: %a is stored (a group result: its store may still be
// reading the buffer) and %c is read again by the add after the relu.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
    %a, %y = npu_tile.kernel "g"(%x) group {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64, plan = #npu_tile.group<sram = 3072, offsets = [0, 1024, 0, 0, 2048, 2048], in_place = [2, 4]>} : (tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
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
// An in-place result is a new value (`value`) at its operand's bytes (`offset`).
// CHECK:      npu_dma.wait
// CHECK-NEXT: %[[A:.*]] = npu_task.sram {offset = [[OA:[0-9]+]] : i64
// CHECK-NEXT: npu_compute.eltwise sigmoid %{{.*}} -> %[[A]] :
// CHECK-NOT:  npu_task.sram {offset = [[OA]] :
// CHECK:      %[[B:.*]] = npu_task.sram {offset = [[OB:[0-9]+]] : i64
// CHECK-NEXT: npu_compute.eltwise relu %[[A]] -> %[[B]] :
// The neg may overwrite %b (read last there, not stored).
// CHECK-NEXT: %[[C:.*]] = npu_task.sram {offset = [[OB]] : i64
// CHECK-NEXT: npu_compute.eltwise neg %[[B]] -> %[[C]] :
// CHECK-NOT:  npu_task.sram {offset = [[OB]] :
// CHECK:      %[[D:.*]] = npu_task.sram {offset = [[OD:[0-9]+]] : i64
// CHECK-NEXT: npu_compute.eltwise relu %[[C]] -> %[[D]] :
// CHECK-NEXT: %[[Y:.*]] = npu_task.sram {offset = [[OD]] : i64
// CHECK-NEXT: npu_compute.eltwise add %[[D]], %[[C]] -> %[[Y]] :

// -----

// Must not overwrite in place through a view: the add reads %e through the reshape
// %r for the last time, but the neg reads %e itself afterwards (issue 13: the add wrote
// over %e and the neg returned -(e + 1)). The reshape is a view: the same value at the
// same bytes; the add's result gets bytes of its own.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<1x1x3x3xf32>) -> (tensor<3x3x1x1xf32>, tensor<1x1x3x3xf32>) {
    %ones = npu_graph.constant {value = dense<1.000000e+00> : tensor<3x3x1x1xf32>} : tensor<3x3x1x1xf32>
    %a, %n = npu_tile.kernel "g"(%x, %ones) group {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64, plan = #npu_tile.group<sram = 192, offsets = [0, 64, 128, 128, 0, 128], in_place = [3]>} : (tensor<1x1x3x3xf32>, tensor<3x3x1x1xf32>) -> (tensor<3x3x1x1xf32>, tensor<1x1x3x3xf32>) {
    ^bb0(%0: tensor<1x1x3x3xf32>, %1: tensor<3x3x1x1xf32>):
      %e = npu_graph.exp %0 : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
      %r = npu_graph.reshape %e : (tensor<1x1x3x3xf32>) -> tensor<3x3x1x1xf32>
      %a_1 = npu_graph.add %r, %1 : (tensor<3x3x1x1xf32>, tensor<3x3x1x1xf32>) -> tensor<3x3x1x1xf32>
      %n_1 = npu_graph.neg %e : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
      npu_tile.yield %a_1, %n_1 : tensor<3x3x1x1xf32>, tensor<1x1x3x3xf32>
    }
    func.return %a, %n : tensor<3x3x1x1xf32>, tensor<1x1x3x3xf32>
  }
}
// CHECK:      npu_dma.wait
// CHECK-NEXT: %[[E:.*]] = npu_task.sram {offset = [[OE:[0-9]+]] : i64, value = [[VE:[0-9]+]] : i64} : memref<1x1x3x3xf32, "sram">
// CHECK-NEXT: npu_compute.eltwise exp %{{.*}} -> %[[E]] :
// CHECK:      %[[R:.*]] = npu_task.sram {offset = [[OE]] : i64, value = [[VE]] : i64} : memref<3x3x1x1xf32, "sram">
// CHECK-NOT:  npu_task.sram {offset = [[OE]] :
// CHECK:      npu_compute.eltwise add %[[R]], %{{.*}} -> %{{.*}} :
// The neg reads %e last: it may take %e's bytes.
// CHECK:      %[[N:.*]] = npu_task.sram {offset = [[OE]] : i64
// CHECK-NEXT: npu_compute.eltwise neg %[[E]] -> %[[N]] :

// -----

// May overwrite in place through a view: nothing reads %e after the add reads it
// through the reshape %r, so the add's result takes %e's bytes.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<1x1x3x3xf32>) -> (tensor<3x3x1x1xf32>, tensor<1x1x3x3xf32>) {
    %ones = npu_graph.constant {value = dense<1.000000e+00> : tensor<3x3x1x1xf32>} : tensor<3x3x1x1xf32>
    %a, %n = npu_tile.kernel "g"(%x, %ones) group {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64, plan = #npu_tile.group<sram = 192, offsets = [0, 64, 128, 0, 128, 128], in_place = [3]>} : (tensor<1x1x3x3xf32>, tensor<3x3x1x1xf32>) -> (tensor<3x3x1x1xf32>, tensor<1x1x3x3xf32>) {
    ^bb0(%0: tensor<1x1x3x3xf32>, %1: tensor<3x3x1x1xf32>):
      %e = npu_graph.exp %0 : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
      %n_1 = npu_graph.neg %e : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
      %r = npu_graph.reshape %e : (tensor<1x1x3x3xf32>) -> tensor<3x3x1x1xf32>
      %a_1 = npu_graph.add %r, %1 : (tensor<3x3x1x1xf32>, tensor<3x3x1x1xf32>) -> tensor<3x3x1x1xf32>
      npu_tile.yield %a_1, %n_1 : tensor<3x3x1x1xf32>, tensor<1x1x3x3xf32>
    }
    func.return %a, %n : tensor<3x3x1x1xf32>, tensor<1x1x3x3xf32>
  }
}
// CHECK:      npu_dma.wait
// CHECK-NEXT: %[[E:.*]] = npu_task.sram {offset = [[OE:[0-9]+]] : i64, value = [[VE:[0-9]+]] : i64} : memref<1x1x3x3xf32, "sram">
// CHECK-NEXT: npu_compute.eltwise exp %{{.*}} -> %[[E]] :
// CHECK:      npu_compute.eltwise neg %[[E]] -> %{{.*}} :
// CHECK:      %[[R:.*]] = npu_task.sram {offset = [[OE]] : i64, value = [[VE]] : i64} : memref<3x3x1x1xf32, "sram">
// CHECK:      %[[A:.*]] = npu_task.sram {offset = [[OE]] : i64
// CHECK-NEXT: npu_compute.eltwise add %[[R]], %{{.*}} -> %[[A]] :
