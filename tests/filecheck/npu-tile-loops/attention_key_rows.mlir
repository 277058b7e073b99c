// RUN: %opt %s -p npu-tile,npu-tile-loops | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// Decode-style attention reading the cached keys untransposed (`key_rows`: k is
// [B, H, T, D]) in 16 KiB of SRAM: the key blocks of k are row blocks, moving with t
// along its T dim like v's; the run matches numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 16384>} {
  func.func @main(%q: tensor<2x4x1x32xf32>, %k: tensor<2x4x256x32xf32>, %v: tensor<2x4x256x32xf32>) -> tensor<2x4x1x32xf32> attributes {npu.inputs = ["q", "k", "v"], npu.outputs = ["o"]} {
    %o = npu_graph.attention %q, %k, %v {scale = 0.176776692 : f32, key_rows} : (tensor<2x4x1x32xf32>, tensor<2x4x256x32xf32>, tensor<2x4x256x32xf32>) -> tensor<2x4x1x32xf32> loc("attn")
    func.return %o : tensor<2x4x1x32xf32>
  }
}
// CHECK:      npu_tile.loop {loops = ["d0", "d1", "d2", "d3", "t"], tile = array<i64: 1, 1, 1, 32, 32>, grid = array<i64: 2, 4, 1, 1, 8>, reductions = 1 : i64}
// CHECK-NEXT: ^bb0(%d0: index, %d1: index, %d2: index, %d3: index, %t: index):
// CHECK-NEXT:   %[[Q:.*]] = npu_tile.load %0(%d0, %d1, %d2, %d3, %t)[%d0, %d1, %d2, 0] sizes [1, 1, 1, 32]
// CHECK-NEXT:   %[[K:.*]] = npu_tile.load %1(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 32 * %t, 0] sizes [1, 1, 32, 32]
// CHECK-NEXT:   %[[V:.*]] = npu_tile.load %2(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 32 * %t, 0] sizes [1, 1, 32, 32]
// CHECK-NEXT:   npu_graph.attention %[[Q]], %[[K]], %[[V]] {scale = 0.176776692 : f32, key_rows, online} : (tensor<1x1x1x32xf32>, tensor<1x1x32x32xf32>, tensor<1x1x32x32xf32>) -> tensor<1x1x1x34xf32>

// SIM: check:       ok vs numpy float64 reference
