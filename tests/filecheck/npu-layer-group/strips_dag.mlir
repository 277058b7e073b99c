// RUN: %opt %s --split-input-file -p npu-tile,npu-layer-group | filecheck %s

// A fire module (SqueezeNet): two branches read %x - a 1x1 conv and a 3x3 conv that
// needs a halo - and a concat joins them before a max-pool. Its 16 KiB concat does
// not fit 16 KiB of SRAM whole, so the whole module is one strip group (the 1x1
// branch reads the middle rows of the input strip; npu-bufferize/strips_dag.mlir).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x4x16x16xf32>) -> tensor<1x16x8x8xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<8x4x1x1xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<8x4x3x3xf32>
    %a = npu_graph.conv2d %x, %w1 : (tensor<1x4x16x16xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x16x16xf32> loc("e1")
    %ar = npu_graph.relu %a : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("e1_relu")
    %b = npu_graph.conv2d %x, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x16x16xf32> loc("e3")
    %br = npu_graph.relu %b : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("e3_relu")
    %c = npu_graph.concat %ar, %br {axis = 1 : i64} : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x16x16x16xf32> loc("cat")
    %p = npu_graph.maxpool %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32> loc("pool")
    func.return %p : tensor<1x16x8x8xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %p = npu_tile.kernel "e1..pool"(%x, %w1, %w3) {kind = "group", loops = "h", tile = array<i64: 2>, grid = array<i64: 4>, {{.*}}parts = 4 : i64}
// CHECK-NEXT:  ^{{.*}}(%[[X:.*]]: tensor<1x4x16x16xf32>, %[[W1:.*]]: tensor<8x4x1x1xf32>, %[[W3:.*]]: tensor<8x4x3x3xf32>):
// CHECK-NEXT:    %[[A:.*]] = npu_graph.conv2d %[[X]], %[[W1]]
// CHECK-NEXT:    %[[AR:.*]] = npu_graph.relu %[[A]]
// CHECK-NEXT:    %[[B:.*]] = npu_graph.conv2d %[[X]], %[[W3]]
// CHECK-NEXT:    %[[BR:.*]] = npu_graph.relu %[[B]]
// CHECK-NEXT:    %[[C:.*]] = npu_graph.concat %[[AR]], %[[BR]]
// CHECK-NEXT:    %[[P:.*]] = npu_graph.maxpool %[[C]]
// CHECK-NEXT:    npu_tile.yield %[[P]]
// CHECK-NOT:   npu_tile.kernel

// -----

// Must not fire: a concat operand is the group's input (%x), whose strip buffer is
// the load slot, not a channel range of the concat: the concat stays its own kernel.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x8x16x16xf32>) -> tensor<1x16x8x8xf32> {
    %w3 = npu_graph.constant {weight = "w3"} : tensor<8x8x3x3xf32>
    %b = npu_graph.conv2d %x, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32> loc("e3")
    %br = npu_graph.relu %b : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("e3_relu")
    %c = npu_graph.concat %x, %br {axis = 1 : i64} : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x16x16x16xf32> loc("cat")
    %p = npu_graph.maxpool %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32> loc("pool")
    func.return %p : tensor<1x16x8x8xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       npu_tile.kernel "e3..e3_relu"
// CHECK:       npu_tile.kernel "cat"(%x, %br) {kind = "apply"
// CHECK:       npu_tile.kernel "pool"(%c) {kind = "pool"

// -----

// Must not fire: the add reads %a at the rows of its output, the 3x3 conv reads %a
// with a halo - computed inside a group, one strip buffer cannot serve both, so no
// group holds c1, c3 and the add. With %a as a group's input the add re-loads it.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<8x8x1x1xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<8x8x3x3xf32>
    %a = npu_graph.conv2d %x, %w1 : (tensor<1x8x16x16xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x16x16xf32> loc("c1")
    %b = npu_graph.conv2d %a, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32> loc("c3")
    %s = npu_graph.add %a, %b : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("add")
    %p = npu_graph.maxpool %s {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32> loc("pool")
    func.return %p : tensor<1x8x8x8xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %a = npu_tile.kernel "c1"(%x, %w1) {kind = "conv2d"
// CHECK:       npu_tile.kernel "c3..pool"(%a, %w3) {kind = "group", loops = "h"

// -----

// Capacity: with 2 KiB of SRAM no strip of the module fits; the concat and the pool
// stay kernels of their own.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 2048>} {
  func.func @main(%x: tensor<1x4x16x16xf32>) -> tensor<1x16x8x8xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<8x4x1x1xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<8x4x3x3xf32>
    %a = npu_graph.conv2d %x, %w1 : (tensor<1x4x16x16xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x16x16xf32> loc("e1")
    %ar = npu_graph.relu %a : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("e1_relu")
    %b = npu_graph.conv2d %x, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x16x16xf32> loc("e3")
    %br = npu_graph.relu %b : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("e3_relu")
    %c = npu_graph.concat %ar, %br {axis = 1 : i64} : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x16x16x16xf32> loc("cat")
    %p = npu_graph.maxpool %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32> loc("pool")
    func.return %p : tensor<1x16x8x8xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       npu_tile.kernel "e3"(%x, %w3) {kind = "conv2d"
// CHECK:       npu_tile.kernel "cat"(%ar, %br) {kind = "apply"
// CHECK:       npu_tile.kernel "pool"(%c) {kind = "pool"
