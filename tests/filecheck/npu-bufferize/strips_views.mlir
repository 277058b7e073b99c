// RUN: %opt %s -p npu-tile,npu-layer-group,npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// Must not overwrite in place through a view in a strip group: the relu reads %v
// through the reshape %r for the last time, but the add reads %v itself afterwards,
// so the relu's result may not take %v's strip buffer (issue 13). The reshape is a
// view of %v (same bytes, same value); the reshape of the relu views the relu's.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x16x3x3xf32>
    %v = npu_graph.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> loc("conv")
    %r = npu_graph.reshape %v : (tensor<1x16x32x32xf32>) -> tensor<1x2x8x32x32xf32> loc("view")
    %t = npu_graph.relu %r : (tensor<1x2x8x32x32xf32>) -> tensor<1x2x8x32x32xf32> loc("relu")
    %u = npu_graph.reshape %t : (tensor<1x2x8x32x32xf32>) -> tensor<1x16x32x32xf32> loc("back")
    %y = npu_graph.add %u, %v : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("add")
    func.return %y : tensor<1x16x32x32xf32>
  }
}
// CHECK:      npu_task.task "conv..add"
// CHECK:      %[[V:.*]] = npu_task.sram {offset = [[OV:[0-9]+]] : i64, value = [[VV:[0-9]+]] : i64} : memref<1x16x3x32xf32, "sram">
// CHECK-NEXT: %[[R:.*]] = npu_task.sram {offset = [[OV]] : i64, value = [[VV]] : i64} : memref<1x2x8x3x32xf32, "sram">
// CHECK-NEXT: %[[T:.*]] = npu_task.sram {offset = [[OT:[0-9]+]] : i64, value = [[VT:[0-9]+]] : i64} : memref<1x2x8x3x32xf32, "sram">
// CHECK-NEXT: %[[U:.*]] = npu_task.sram {offset = [[OT]] : i64, value = [[VT]] : i64} : memref<1x16x3x32xf32, "sram">
// CHECK-NOT:  npu_task.sram {offset = [[OV]] : i64, value = [[VT]] : i64}
// CHECK:      npu_compute.conv2d %{{.*}}, %{{.*}} -> %[[V]]
// CHECK-NEXT: npu_compute.eltwise relu %[[R]] -> %[[T]]
// CHECK-NEXT: npu_compute.eltwise add %[[U]], %[[V]] -> %{{[0-9]+}}
