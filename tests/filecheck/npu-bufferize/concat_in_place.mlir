// RUN: %opt %s --split-input-file -p npu-tile,npu-tile-loops,npu-bufferize | filecheck %s

// Batch-1 concat along channels: each operand is a contiguous byte range of the
// result, so its producer writes a byte-offset view of the concat's buffer and
// the concat itself moves nothing (no task).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<1x4x8x8xf32>, %y: tensor<1x2x8x8xf32>) -> tensor<1x6x8x8xf32> {
    %a = npu_graph.relu %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("a")
    %b = npu_graph.sigmoid %y : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> loc("b")
    %c = npu_graph.concat %a, %b {axis = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x6x8x8xf32> loc("cat")
    %r = npu_graph.tanh %c : (tensor<1x6x8x8xf32>) -> tensor<1x6x8x8xf32> loc("after")
    func.return %r : tensor<1x6x8x8xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:         %[[CAT:.*]] = npu_task.alloc : memref<1x6x8x8xf32, "dram">
// CHECK-NEXT:    %[[A:.*]] = npu_task.view %[[CAT]] {offset = 0 : i64} : memref<1x6x8x8xf32, "dram"> to memref<1x4x8x8xf32, "dram">
// CHECK-NEXT:    npu_task.task "a"
// CHECK:           npu_dma.copy {{.*}} -> %[[A]]
// CHECK:         %[[B:.*]] = npu_task.view %[[CAT]] {offset = 1024 : i64} : memref<1x6x8x8xf32, "dram"> to memref<1x2x8x8xf32, "dram">
// CHECK-NEXT:    npu_task.task "b"
// CHECK:           npu_dma.copy {{.*}} -> %[[B]]
// CHECK-NOT:     npu_task.task "cat"
// CHECK:         npu_task.task "after"
// CHECK:           npu_dma.copy %[[CAT]]

// -----

// Not in place: with batch 2 an operand is not one contiguous range of the result,
// so the concat stays a kernel that copies its operands.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<2x4x8x8xf32>, %y: tensor<2x2x8x8xf32>) -> tensor<2x6x8x8xf32> {
    %a = npu_graph.relu %x : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> loc("a")
    %b = npu_graph.sigmoid %y : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> loc("b")
    %c = npu_graph.concat %a, %b {axis = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x6x8x8xf32> loc("cat")
    func.return %c : tensor<2x6x8x8xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:     npu_task.view
// CHECK:         npu_task.task "a"
// CHECK:         npu_task.task "b"
// CHECK:         npu_task.task "cat"
// CHECK:           npu_compute.apply "npu_graph.concat"

// -----

// Not in place: an operand is a graph input (nothing produces it on the device).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<1x4x8x8xf32>, %y: tensor<1x2x8x8xf32>) -> tensor<1x6x8x8xf32> {
    %a = npu_graph.relu %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("a")
    %c = npu_graph.concat %a, %y {axis = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x6x8x8xf32> loc("cat")
    func.return %c : tensor<1x6x8x8xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:     npu_task.view
// CHECK:         npu_task.task "cat"
