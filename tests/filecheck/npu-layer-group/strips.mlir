// RUN: %opt %s --split-input-file -p npu-tile,npu-layer-group | filecheck %s

// A stem (conv 3x3 + bias + relu + max-pool 3x3/2) whose 64 KiB conv output does not
// fit 32 KiB of SRAM: one strip group. Each strip is 2 pooled rows (8 strips), split
// over the cores: two strips per core, too few for loading the next strip's input
// while one computes to pay (layer_group.mlir has a stem that does); the conv
// recomputes the rows its neighbours also need.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x32x32xf32>) -> tensor<1x16x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xf32>
    %b = npu_graph.constant {weight = "b"} : tensor<16xf32>
    %c = npu_graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x32x32xf32> loc("conv")
    %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("relu")
    %p = npu_graph.maxpool %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32> loc("pool")
    func.return %p : tensor<1x16x16x16xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %p = npu_tile.kernel "conv..pool"(%x, %w, %b) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 8>, {{.*}}parts = 4 : i64, part_cycles = array<i64: 5196, 3080, 2664, 2076>, plan = #npu_tile.strip<rows = 2, strips = 8, halo = [2, 1], sram = 24256>}
// CHECK-NEXT:  ^{{.*}}(%[[X:.*]]: tensor<1x8x32x32xf32>, %[[W:.*]]: tensor<16x8x3x3xf32>, %[[B:.*]]: tensor<16xf32>):
// CHECK-NEXT:    %[[C:.*]] = npu_graph.conv2d %[[X]], %[[W]], %[[B]]
// CHECK-NEXT:    %[[R:.*]] = npu_graph.relu %[[C]]
// CHECK-NEXT:    %[[P:.*]] = npu_graph.maxpool %[[R]]
// CHECK-NEXT:    npu_tile.yield %[[P]]
// CHECK-NOT:   npu_tile.kernel

// -----

// A residual block: the add reads the group's input %x at its own rows while the
// conv needs a halo, so each strip loads %x twice (the halo rows for the conv, the
// output rows for the add: a side input); with 32 KiB nothing fits whole.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x16x3x3xf32>
    %c = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> loc("conv")
    %s = npu_graph.add %c, %x : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("res")
    %r = npu_graph.relu %s : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("relu")
    func.return %r : tensor<1x16x32x32xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %r = npu_tile.kernel "conv..relu"(%x, %w) group {loops = ["h"]
// CHECK-NEXT:  ^{{.*}}(%[[X:.*]]: tensor<1x16x32x32xf32>, %[[W:.*]]: tensor<16x16x3x3xf32>):
// CHECK-NEXT:    %[[C:.*]] = npu_graph.conv2d %[[X]], %[[W]]
// CHECK-NEXT:    %[[S:.*]] = npu_graph.add %[[C]], %[[X]]
// CHECK-NEXT:    npu_graph.relu %[[S]]

// -----

// Capacity: the conv's weights (36 KiB) alone exceed 32 KiB, so no strip height
// fits (weights stay resident for the whole loop): tiled kernels.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x32x32x32xf32>) -> tensor<1x32x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<32x32x3x3xf32>
    %c = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x32x32x32xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x32x32xf32> loc("conv")
    %p = npu_graph.maxpool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x32x32x32xf32>) -> tensor<1x32x16x16xf32> loc("pool")
    func.return %p : tensor<1x32x16x16xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:   ) group {
// CHECK:       npu_tile.kernel "conv"{{.*}}) conv2d {
// CHECK:       npu_tile.kernel "pool"{{.*}}) pool {

// -----

// A ShuffleNet unit: the channel shuffle (reshapes and a transpose that keep H and W
// last) and the residual add of the unit's input (a side input, loaded per strip with
// the rows the add needs) join one strip group; 64 KiB activations do not fit 32 KiB.
// %x is read twice per strip: with the depthwise conv's halo by the first conv, at
// the output's rows by the add.
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
// CHECK-LABEL: func.func @main
// CHECK:       npu_tile.kernel "/g1/Conv../relu_1/Relu"(%x, %{{.*}}, %{{.*}}, %{{.*}}) group {loops = ["h"]
// CHECK-NEXT:  ^
// CHECK-NEXT:    npu_graph.conv2d
// CHECK-NEXT:    npu_graph.relu
// CHECK-NEXT:    npu_graph.reshape
// CHECK-NEXT:    npu_graph.transpose
// CHECK-NEXT:    npu_graph.reshape
// CHECK-NEXT:    npu_graph.conv2d
// CHECK-NEXT:    npu_graph.conv2d
// CHECK-NEXT:    npu_graph.add
// CHECK-NEXT:    npu_graph.relu
// CHECK-NOT:   npu_tile.kernel

// -----

// LRN normalises across channels at each (h, w): it joins a strip group like an
// elementwise op (GoogLeNet's stem: conv + relu + LRN + max-pool).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x32x32xf32>) -> tensor<1x16x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xf32>
    %c = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32> loc("conv")
    %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("relu")
    %n = npu_graph.lrn %r {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("lrn")
    %p = npu_graph.maxpool %n {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32> loc("pool")
    func.return %p : tensor<1x16x16x16xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %p = npu_tile.kernel "conv..pool"(%x, %w) group {loops = ["h"]
// CHECK:         npu_graph.conv2d
// CHECK-NEXT:    npu_graph.relu
// CHECK-NEXT:    npu_graph.lrn
// CHECK-NEXT:    npu_graph.maxpool
// CHECK-NOT:   npu_tile.kernel

// -----

// An unpadded average pool (DenseNet's transition: conv 1x1 + average pool 2x2/2)
// joins a strip group: each strip of pooled rows reads twice as many conv rows.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x8x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<8x16x1x1xf32>
    %c = npu_graph.conv2d %x, %w : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32> loc("conv")
    %p = npu_graph.avgpool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x8x32x32xf32>) -> tensor<1x8x16x16xf32> loc("pool")
    func.return %p : tensor<1x8x16x16xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %p = npu_tile.kernel "conv..pool"(%x, %w) group {loops = ["h"]
// CHECK:         npu_graph.conv2d
// CHECK-NEXT:    npu_graph.avgpool
// CHECK-NOT:   npu_tile.kernel

// -----

// Must not fire: a padded average pool reads rows outside its input as NaN (left out
// of the divisor); for a computed input that would take a NaN mask, which strips do
// not make (only the group input is padded with NaN, by the DMA): the pool stays a
// kernel.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x8x32x32xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<8x16x1x1xf32>
    %c = npu_graph.conv2d %x, %w : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32> loc("conv")
    %p = npu_graph.avgpool %c {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32> loc("pool")
    func.return %p : tensor<1x8x32x32xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:   ) group {
// CHECK:       npu_tile.kernel "pool"(%c) apply

// -----

// An Inception pool branch: the padded average pool reads the group input, which the
// DMA pads with NaN; the conv 1x1 after it has no padding, so the NaN rows of the
// pool's result outside the tensor never reach a row inside: one strip group.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x8x32x32xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<8x16x1x1xf32>
    %p = npu_graph.avgpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("pool")
    %c = npu_graph.conv2d %p, %w : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32> loc("conv")
    func.return %c : tensor<1x8x32x32xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %c = npu_tile.kernel "pool..conv"(%x, %w) group {loops = ["h"]
// CHECK:         npu_graph.avgpool
// CHECK-NEXT:    npu_graph.conv2d
// CHECK-NOT:   npu_tile.kernel
