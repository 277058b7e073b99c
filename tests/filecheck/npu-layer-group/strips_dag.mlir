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
// CHECK:       %p = npu_tile.kernel "e1..pool"(%x, %w1, %w3) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 4>, {{.*}}parts = 4 : i64, part_cycles = array<i64: {{.*}}>, plan = #npu_tile.strip<rows = 2, strips = 4, halo = [2, 1], sram = 9344>}
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
// CHECK:       npu_tile.kernel "cat"(%x, %br) apply
// CHECK:       npu_tile.kernel "pool"(%c) pool

// -----

// The add reads %a at the rows of its output, the 3x3 conv reads %a with a halo: %a
// holds the rows of both and the add reads a copy of its middle rows (an SRAM-to-SRAM
// DMA, `StripGeometry.local`), so c1, c3, the add and the pool are one group.
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
// CHECK:       %p = npu_tile.kernel "c1..pool"(%x, %w1, %w3) group {loops = ["h"]
// CHECK-NEXT:  ^{{.*}}(%[[X:.*]]: tensor<1x8x16x16xf32>, %[[W1:.*]]: tensor<8x8x1x1xf32>, %[[W3:.*]]: tensor<8x8x3x3xf32>):
// CHECK-NEXT:    %[[A:.*]] = npu_graph.conv2d %[[X]], %[[W1]]
// CHECK-NEXT:    %[[B:.*]] = npu_graph.conv2d %[[A]], %[[W3]]
// CHECK-NEXT:    %[[S:.*]] = npu_graph.add %[[A]], %[[B]]
// CHECK-NEXT:    %[[P:.*]] = npu_graph.maxpool %[[S]]

// -----

// Must not fire: an LRN reads %a at the rows of its output while the 3x3 conv reads %a
// with a halo - only convs and pools crop a strip buffer and only elementwise ops read
// a copy of part of it, so no group holds c1 and the LRN; c1 and c3 form a strip group
// that stores both results (%a, read after it by the LRN, too) and the LRN, add and
// pool form a group over %a.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<8x8x1x1xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<8x8x3x3xf32>
    %a = npu_graph.conv2d %x, %w1 : (tensor<1x8x16x16xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x16x16xf32> loc("c1")
    %b = npu_graph.conv2d %a, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32> loc("c3")
    %l = npu_graph.lrn %a {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("lrn")
    %s = npu_graph.add %l, %b : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> loc("add")
    %p = npu_graph.maxpool %s {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32> loc("pool")
    func.return %p : tensor<1x8x8x8xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %a, %b = npu_tile.kernel "c1..c3"(%x, %w1, %w3) group {loops = ["h"]
// CHECK:         npu_tile.yield %a_1, %b_1
// CHECK:       %p = npu_tile.kernel "lrn..pool"(%a, %b) group {loops = ["h"]

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
// CHECK:       npu_tile.kernel "e3"(%x, %w3) conv2d
// CHECK:       npu_tile.kernel "cat"(%ar, %br) apply
// CHECK:       npu_tile.kernel "pool"(%c) pool
