// RUN: %opt %s --split-input-file -p npu-tile,npu-layer-group,npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir
// RUN: %opt %s --split-input-file -p 'npu-tile,npu-layer-group{line-buffers=always},npu-tile-loops,npu-bufferize' -o %t2.mlir && filecheck %s --check-prefix=LINES < %t2.mlir

// The ShuffleNet unit of npu-layer-group/strips.mlir, one strip group: the add reads
// the group's input %x at rows inside those the strip holds for the first conv (5 rows
// from 3s - 1, the 3x3 depthwise conv's halo), so it reads a copy of the 3 rows from 3s
// out of the input's strip buffer (SRAM to SRAM) instead of loading them again.
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
// CHECK:        %[[IN:.*]] = npu_task.sram {{.*}} : memref<1x16x5x32xf32, "sram">
// CHECK:        scf.for %[[S:.*]] = 
// CHECK:          npu_dma.copy %[[X]][{{.*}}] -> %[[IN]]{{.*}} {sizes = array<i64: 1, 16, 5, 32>, pad_value = 0.000000e+00 : f32}
// CHECK-NOT:      npu_dma.copy %[[X]]
// CHECK:          %[[COPY:.*]] = npu_dma.copy %[[IN]][%{{.*}}, %{{.*}}, %[[ONE:.*]], %{{.*}}] -> %[[SIDE:[^\[]*]][{{.*}} {sizes = array<i64: 1, 16, 3, 32>}
// CHECK-NEXT:     npu_dma.wait %[[COPY]]
// CHECK-NEXT:     npu_compute.eltwise add %{{[0-9]+}}, %[[SIDE]] -> %{{[0-9]+}}

// -----

// A ResNet bottleneck (tools/testkit/models.py): recomputing halos, the first conv's strip holds
// the rows the add reads and they are copied out as above. With line buffers the first
// conv computes only each strip's 3 new rows (from 3s + 1), which leave out the add's
// rows from 3s: the add re-loads its rows of %x from DRAM as a side input.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 24576>} {
  func.func @main(%x: tensor<1x16x24x24xf32>) -> tensor<1x16x24x24xf32> {
    %0 = npu_graph.constant {weight = "c1.weight"} : tensor<8x16x1x1xf32>
    %1 = npu_graph.conv2d %x, %0 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x24x24xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x24x24xf32> loc("/c1/Conv")
    %2 = npu_graph.relu %1 : (tensor<1x8x24x24xf32>) -> tensor<1x8x24x24xf32> loc("/relu/Relu")
    %3 = npu_graph.constant {weight = "c2.weight"} : tensor<8x8x3x3xf32>
    %4 = npu_graph.conv2d %2, %3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x24x24xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x24x24xf32> loc("/c2/Conv")
    %5 = npu_graph.relu %4 : (tensor<1x8x24x24xf32>) -> tensor<1x8x24x24xf32> loc("/relu_1/Relu")
    %6 = npu_graph.constant {weight = "c3.weight"} : tensor<16x8x1x1xf32>
    %7 = npu_graph.conv2d %5, %6 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x24x24xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x24x24xf32> loc("/c3/Conv")
    %8 = npu_graph.add %7, %x : (tensor<1x16x24x24xf32>, tensor<1x16x24x24xf32>) -> tensor<1x16x24x24xf32> loc("/add/Add")
    %9 = npu_graph.relu %8 : (tensor<1x16x24x24xf32>) -> tensor<1x16x24x24xf32> loc("/relu_2/Relu")
    func.return %9 : tensor<1x16x24x24xf32>
  }
}
// CHECK:      func.func @main(%[[X:[^:]*]]: memref<1x16x24x24xf32, "dram">
// CHECK:        %[[IN:.*]] = npu_task.sram {{.*}} : memref<1x16x5x24xf32, "sram">
// CHECK:        scf.for
// CHECK:          npu_dma.copy %[[X]][{{.*}}] -> %[[IN]]{{.*}} {sizes = array<i64: 1, 16, 5, 24>, pad_value = 0.000000e+00 : f32}
// CHECK-NOT:      npu_dma.copy %[[X]]
// CHECK:          npu_dma.copy %[[IN]][{{.*}}] -> %[[SIDE:[^\[]*]][{{.*}} {sizes = array<i64: 1, 16, 3, 24>}
// CHECK:          npu_compute.eltwise add %{{[0-9]+}}, %[[SIDE]] -> %{{[0-9]+}}

// LINES-LABEL:  func.func @main(%{{.*}}: memref<1x16x24x24xf32, "dram">
// LINES:          npu_dma.copy %[[X:[^\[]*]][{{.*}}, %[[NEW:.*]], %{{.*}}] -> %[[IN:[^\[]*]][{{.*}} {sizes = array<i64: 1, 16, 3, 24>, pad_value = 0.000000e+00 : f32}
// LINES-NEXT:     %[[ROW:.*]] = arith.muli
// LINES-NEXT:     npu_dma.copy %[[X]][%{{.*}}, %{{.*}}, %[[ROW]], %{{.*}}] -> %[[SIDE:[^\[]*]][{{.*}} {sizes = array<i64: 1, 16, 3, 24>, pad_value = 0.000000e+00 : f32}
// LINES:          npu_compute.eltwise add %{{[0-9]+}}, %[[SIDE]] -> %{{[0-9]+}}
