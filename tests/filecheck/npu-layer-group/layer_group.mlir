// RUN: %opt %s --split-input-file -p npu-tile,npu-layer-group | filecheck %s

// Attention-like chain (matmul -> softmax -> matmul) on small tensors: the three
// kernels become one layer group whose intermediates never leave SRAM. The group
// records the SRAM its buffers need and the cost model's cycles, below the sum
// of the three kernels'.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%q: tensor<8x32xf32>, %k: tensor<8x32xf32>, %v: tensor<8x32xf32>) -> tensor<8x32xf32> {
    %kt = npu_graph.transpose %k {perm = array<i64: 1, 0>} : (tensor<8x32xf32>) -> tensor<32x8xf32> loc("kt")
    %s = npu_graph.matmul %q, %kt : (tensor<8x32xf32>, tensor<32x8xf32>) -> tensor<8x8xf32> loc("scores")
    %p = npu_graph.softmax %s {axis = -1 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("probs")
    %o = npu_graph.matmul %p, %v : (tensor<8x8xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("context")
    func.return %o : tensor<8x32xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %[[G:.*]] = npu_tile.kernel "kt..context"(%k, %q, %v) group {loops = [], tile = array<i64>, grid = array<i64>, sram_bytes = 4096 : i64, predicted_cycles = [[CYC:[0-9]+]] : i64, dram_bytes = 4096 : i64, plan = #npu_tile.group<sram = 4096, offsets = [0, 1024, 2048, 3072, 0, 256, 512]>}
// CHECK-NEXT:  ^{{.*}}(%[[K:.*]]: tensor<8x32xf32>, %[[Q:.*]]: tensor<8x32xf32>, %[[V:.*]]: tensor<8x32xf32>):
// CHECK-NEXT:    %[[T:.*]] = npu_graph.transpose %[[K]]
// CHECK-NEXT:    %[[S:.*]] = npu_graph.matmul %[[Q]], %[[T]]
// CHECK-NEXT:    %[[P:.*]] = npu_graph.softmax %[[S]]
// CHECK-NEXT:    %[[O:.*]] = npu_graph.matmul %[[P]], %[[V]]
// CHECK-NEXT:    npu_tile.yield %[[O]] : tensor<8x32xf32>
// CHECK:       func.return %[[G]]

// -----

// A residual block: the group input %x feeds the first gemm and the residual add,
// and the hidden activation %h is also returned, so the group has two results
// (both stored to DRAM) and the add reads %h from SRAM.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<64x64xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<64x64xf32>
    %a = npu_graph.matmul %x, %w1 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> loc("fc1")
    %h = npu_graph.relu %a : (tensor<4x64xf32>) -> tensor<4x64xf32> loc("act1")
    %b = npu_graph.matmul %h, %w2 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> loc("fc2")
    %y = npu_graph.add %b, %x : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32> loc("residual")
    func.return %y, %h : tensor<4x64xf32>, tensor<4x64xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %[[H:.*]], %[[Y:.*]] = npu_tile.kernel "fc1..residual"(%x, %w1, %w2) group
// CHECK-SAME:    plan = #npu_tile.group<sram = 34816, offsets = [32768, 0, 16384, 33792, 33792, 0, 0], in_place = [1, 3]>
// CHECK-SAME:    -> (tensor<4x64xf32>, tensor<4x64xf32>)
// CHECK:         %[[IH:.*]] = npu_graph.relu
// CHECK:         %[[IY:.*]] = npu_graph.add
// CHECK-NEXT:    npu_tile.yield %[[IH]], %[[IY]] : tensor<4x64xf32>, tensor<4x64xf32>
// CHECK:       func.return %[[Y]], %[[H]]

// -----

// Capacity limit: the same attention chain with 2 KiB of SRAM. Tiles still fit,
// whole tensors do not, so every kernel stays on its own.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 2048>} {
  func.func @main(%q: tensor<8x32xf32>, %k: tensor<8x32xf32>, %v: tensor<8x32xf32>) -> tensor<8x32xf32> {
    %kt = npu_graph.transpose %k {perm = array<i64: 1, 0>} : (tensor<8x32xf32>) -> tensor<32x8xf32> loc("kt")
    %s = npu_graph.matmul %q, %kt : (tensor<8x32xf32>, tensor<32x8xf32>) -> tensor<8x8xf32> loc("scores")
    %p = npu_graph.softmax %s {axis = -1 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("probs")
    %o = npu_graph.matmul %p, %v : (tensor<8x8xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("context")
    func.return %o : tensor<8x32xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:   ) group {
// CHECK:       npu_tile.kernel "kt"
// CHECK:       npu_tile.kernel "scores"
// CHECK:       npu_tile.kernel "probs"
// CHECK:       npu_tile.kernel "context"

// -----

// Activations larger than SRAM (a 1x64x64x64 feature map is 1 MiB): conv + pool
// become a strip group (loops "h": 16 strips of 2 pooled rows, split over the 4
// cores, the next strip's rows loaded while one computes), the conv's rows never
// leave SRAM. (npu-layer-group/strips.mlir has more.)
builtin.module {
  func.func @main(%x: tensor<1x64x64x64xf32>) -> tensor<1x64x32x32xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<64x64x3x3xf32>
    %c = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x64x64xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x64x64xf32> loc("conv")
    %p = npu_graph.maxpool %c {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x64x64x64xf32>) -> tensor<1x64x32x32xf32> loc("pool")
    func.return %p : tensor<1x64x32x32xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       npu_tile.kernel "conv..pool"(%x, %w) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 16>, double_buffer = true, {{.*}}parts = 4 : i64, part_cycles = array<i64: {{.*}}>, plan = #npu_tile.strip<rows = 2, strips = 16, halo = [1, 1], sram = 425984, prefetch>}
