// RUN: %opt %s --split-input-file -p npu-tile,npu-layer-group | filecheck %s
// RUN: %opt %s --split-input-file -p 'npu-tile,npu-layer-group{batch-split=false}' | filecheck %s --check-prefix=OFF

// A LeNet stem on a batch of 8 images (conv 5x5 pad 2 + bias + relu + max-pool 2x2):
// each image is computed on its own, so the run is a batch-split group - 4 slices of
// 2 images, one per core (loops ["n"]), each loading its rows of %x and every weight,
// predicted well below the whole batch on one core; the plan places one slice's
// values. With batch-split=false the whole batch is one group on one core.
builtin.module {
  func.func @main(%x: tensor<8x1x28x28xf32>) -> tensor<8x6x14x14xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<6x1x5x5xf32>
    %b = npu_graph.constant {weight = "b"} : tensor<6xf32>
    %c = npu_graph.conv2d %x, %w, %b {pads = array<i64: 2, 2, 2, 2>} : (tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>) -> tensor<8x6x28x28xf32> loc("conv")
    %r = npu_graph.relu %c : (tensor<8x6x28x28xf32>) -> tensor<8x6x28x28xf32> loc("relu")
    %p = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<8x6x28x28xf32>) -> tensor<8x6x14x14xf32> loc("pool")
    func.return %p : tensor<8x6x14x14xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %p = npu_tile.kernel "conv..pool"(%x, %w, %b) group {loops = ["n"], tile = array<i64: 2>, grid = array<i64: 4>, {{.*}}predicted_cycles = [[CYC:[0-9]+]] : i64, {{.*}}parts = 4 : i64, part_cycles = array<i64: {{.*}}>, plan = #npu_tile.group<sram = [[SRAM:[0-9]+]], offsets = [{{.*}}]>}
// CHECK-NEXT:  ^{{.*}}(%[[X:.*]]: tensor<8x1x28x28xf32>, %[[W:.*]]: tensor<6x1x5x5xf32>, %[[B:.*]]: tensor<6xf32>):
// CHECK-NEXT:    %[[C:.*]] = npu_graph.conv2d %[[X]], %[[W]], %[[B]] {{.*}} -> tensor<8x6x28x28xf32>
// CHECK-NEXT:    %[[R:.*]] = npu_graph.relu %[[C]]
// CHECK-NEXT:    %[[P:.*]] = npu_graph.maxpool %[[R]]
// CHECK-NEXT:    npu_tile.yield %[[P]]
// CHECK-NOT:   npu_tile.kernel
// OFF-LABEL:   func.func @main
// OFF:         npu_tile.kernel "conv..pool"(%x, %w, %b) group {loops = [], tile = array<i64>, grid = array<i64>

// -----

// Must not fire: one image (no batch to split): a layer group of the whole image.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 131072>} {
  func.func @main(%x: tensor<1x8x32x32xf32>) -> tensor<1x16x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xf32>
    %c = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32> loc("conv")
    %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("relu")
    %p = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32> loc("pool")
    func.return %p : tensor<1x16x16x16xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       npu_tile.kernel "conv..pool"(%x, %w) group {loops = [], tile = array<i64>, grid = array<i64>

// -----

// Must not fire: a transpose moves the batch off dim 0, so the samples mix; each
// kernel stays on its own (nothing fits 128 KiB whole).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 131072>} {
  func.func @main(%x: tensor<8x16x32x32xf32>) -> tensor<16x8x32x32xf32> {
    %r = npu_graph.relu %x : (tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32> loc("relu")
    %t = npu_graph.transpose %r {perm = array<i64: 1, 0, 2, 3>} : (tensor<8x16x32x32xf32>) -> tensor<16x8x32x32xf32> loc("swap")
    %e = npu_graph.relu %t : (tensor<16x8x32x32xf32>) -> tensor<16x8x32x32xf32> loc("relu2")
    func.return %e : tensor<16x8x32x32xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:   loops = ["n"]
// CHECK:       func.return

// -----

// Must not fire: on one core the slices would only run one after another, and the
// batch fits whole: one layer group without loops.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<64x64xf32>
    %a = npu_graph.matmul %x, %w1 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> loc("fc1")
    %h = npu_graph.relu %a : (tensor<4x64xf32>) -> tensor<4x64xf32> loc("act1")
    func.return %h : tensor<4x64xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       npu_tile.kernel "fc1..act1"(%x, %w1) group {loops = [], tile = array<i64>, grid = array<i64>
