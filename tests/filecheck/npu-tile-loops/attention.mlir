// RUN: %opt %s -p 'npu-tile{double-buffer=false},npu-tile-loops' | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// An attention kernel (npu-fuse's `attention` rule) tiles over heads (d1), query
// blocks (d2) and key blocks (t, a reduction). Here, single buffered with 128 KiB of
// SRAM per core, the keys stay whole (one step of t; double buffered, two key blocks
// of 64 are predicted faster, 2774 cycles against 2856): a tile loads its query rows, its head's whole
// kt and v and the mask row, and keeps its scores (64 x 128) in SRAM between the
// two products; the reduce has nothing to merge. The run matches numpy.
// (npu-bufferize/attention_online.mlir: the same kernel with key blocks.)
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 131072>} {
  func.func @main(%q: tensor<1x4x64x32xf32>, %kt: tensor<1x4x32x128xf32>, %v: tensor<1x4x128x32xf32>, %mask: tensor<1x1x1x128xf32>) -> tensor<1x4x64x32xf32> attributes {npu.inputs = ["q", "kt", "v", "mask"], npu.outputs = ["o"]} {
    %o = npu_graph.attention %q, %kt, %v, %mask {scale = 0.176776692 : f32} : (tensor<1x4x64x32xf32>, tensor<1x4x32x128xf32>, tensor<1x4x128x32xf32>, tensor<1x1x1x128xf32>) -> tensor<1x4x64x32xf32> loc("attn")
    func.return %o : tensor<1x4x64x32xf32>
  }
}
// CHECK:      npu_tile.kernel "attn"(%q, %kt, %v, %mask) apply {loops = ["d0", "d1", "d2", "d3", "t"], tile = array<i64: 1, 1, 64, 32, 128>, grid = array<i64: 1, 4, 1, 1, 1>
// CHECK:        npu_tile.loop {loops = ["d0", "d1", "d2", "d3", "t"], tile = array<i64: 1, 1, 64, 32, 128>, grid = array<i64: 1, 4, 1, 1, 1>, reductions = 1 : i64
// CHECK-NEXT:   ^bb0(%d0: index, %d1: index, %d2: index, %d3: index, %t: index):
// CHECK-NEXT:     %[[Q:.*]] = npu_tile.load %0(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 64 * %d2, 0] sizes [1, 1, 64, 32]
// CHECK-NEXT:     %[[K:.*]] = npu_tile.load %1(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 0, 0] sizes [1, 1, 32, 128]
// CHECK-NEXT:     %[[V:.*]] = npu_tile.load %2(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 0, 0] sizes [1, 1, 128, 32]
// CHECK-NEXT:     %[[M:.*]] = npu_tile.load %3(%d0, %d1, %d2, %d3, %t)[%d0, 0, 0, 0] sizes [1, 1, 1, 128]
// CHECK-NEXT:     %[[A:.*]] = npu_graph.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 0.176776692 : f32} : {{.*}} -> tensor<1x1x64x32xf32>
// CHECK-NEXT:     %[[R:.*]] = npu_tile.reduce %[[A]] : tensor<1x1x64x32xf32> -> tensor<1x1x64x32xf32>
// CHECK-NEXT:     npu_tile.store %[[R]](%d0, %d1, %d2, %d3, %t)[%d0, %d1, 64 * %d2, 32 * %d3] sizes [1, 1, 64, 32]

// SIM: check:       ok vs numpy float64 reference
