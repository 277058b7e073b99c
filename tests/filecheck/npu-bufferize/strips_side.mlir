// RUN: %opt %s -p npu-tile,npu-layer-group,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// The ShuffleNet unit of npu-layer-group/strips.mlir, one strip group: the add reads
// the group's input %x at other rows than the strip holds for the first conv, so %x
// is also a side input: each strip loads 4 rows of %x from 2s - 1 (the 3x3 depthwise
// conv's halo) and again the 2 rows from 2s the add needs, which the add reads.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    %0 = npu_graph.constant {weight = "g1.weight"} : tensor<16x8x1x1xf32>
    %1 = npu_graph.conv2d %x, %0 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x16x32x32xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x32x32xf32> loc("/g1/Conv")
    %2 = npu_graph.relu %1 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("/relu/Relu")
    %3 = npu_graph.reshape %2 : (tensor<1x16x32x32xf32>) -> tensor<1x2x8x32x32xf32> loc("/shuffle/Reshape")
    %4 = npu_graph.transpose %3 {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x8x32x32xf32>) -> tensor<1x8x2x32x32xf32> loc("/shuffle/Transpose")
    %5 = npu_graph.reshape %4 : (tensor<1x8x2x32x32xf32>) -> tensor<1x16x32x32xf32> loc("/shuffle/Reshape_1")
    %6 = npu_graph.constant {weight = "dw.weight"} : tensor<16x1x3x3xf32>
    %7 = npu_graph.conv2d %5, %6 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 16 : i64} : (tensor<1x16x32x32xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x32x32xf32> loc("/dw/Conv")
    %8 = npu_graph.constant {weight = "g2.weight"} : tensor<16x8x1x1xf32>
    %9 = npu_graph.conv2d %7, %8 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x16x32x32xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x32x32xf32> loc("/g2/Conv")
    %10 = npu_graph.add %9, %x : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("/add/Add")
    %11 = npu_graph.relu %10 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("/relu_1/Relu")
    func.return %11 : tensor<1x16x32x32xf32>
  }
}
// CHECK:      func.func @main(%[[X:[^:]*]]: memref<1x16x32x32xf32, "dram">
// CHECK:      npu_task.task "/g1/Conv../relu_1/Relu"
// CHECK:        %[[IN:.*]] = npu_task.sram {{.*}} : memref<1x16x4x32xf32, "sram">
// CHECK:        scf.for %[[S:.*]] = 
// CHECK:          npu_dma.copy %[[X]][{{.*}}] -> %[[IN]]{{.*}} {sizes = array<i64: 1, 16, 4, 32>, pad_value = 0.000000e+00 : f32}
// CHECK-NEXT:     %[[R:.*]] = arith.muli %[[S]], %{{.*}}
// CHECK-NEXT:     npu_dma.copy %[[X]][%{{.*}}, %{{.*}}, %[[R]], %{{.*}}] -> %[[SIDE:[^\[]*]][{{.*}} {sizes = array<i64: 1, 16, 2, 32>
// CHECK:          npu_compute.eltwise "add" %[[OUT:.*]], %[[SIDE]] -> %[[OUT]]
