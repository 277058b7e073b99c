// RUN: %opt %s -p npu-tile,npu-tile-loops | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// Attention on [B, S, H, D] tensors (`bshd`: q, k, v and the result as the
// projections leave them) over 16 KiB of SRAM: the tiles cut the heads (dim 2) and
// the keys come in blocks (flash attention); every window picks one head's rows
// out of the interleaved tensors, and the state is stored into the result's head
// columns. The run matches numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 2, sram_bytes = 16384>} {
  func.func @main(%q: tensor<1x64x4x32xf32>, %k: tensor<1x256x4x32xf32>, %v: tensor<1x256x4x32xf32>) -> tensor<1x64x4x32xf32> attributes {npu.inputs = ["q", "k", "v"], npu.outputs = ["o"]} {
    %o = npu_graph.attention %q, %k, %v {scale = 0.176776692 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>} : (tensor<1x64x4x32xf32>, tensor<1x256x4x32xf32>, tensor<1x256x4x32xf32>) -> tensor<1x64x4x32xf32> loc("attn")
    func.return %o : tensor<1x64x4x32xf32>
  }
}
// CHECK:      npu_tile.loop {loops = ["d0", "d1", "d2", "d3", "t"]
// CHECK-NEXT: ^bb0(%d0: index, %d1: index, %d2: index, %d3: index, %t: index):
// CHECK-NEXT:   %[[Q:.*]] = npu_tile.load %0(%d0, %d1, %d2, %d3, %t)[%d0, {{[0-9]+}} * %d1, %d2, 0] sizes [1, {{[0-9]+}}, 1, 32]
// CHECK-NEXT:   %[[K:.*]] = npu_tile.load %1(%d0, %d1, %d2, %d3, %t)[%d0, {{[0-9]+}} * %t, %d2, 0] sizes [1, {{[0-9]+}}, 1, 32]
// CHECK-NEXT:   %[[V:.*]] = npu_tile.load %2(%d0, %d1, %d2, %d3, %t)[%d0, {{[0-9]+}} * %t, %d2, 0] sizes [1, {{[0-9]+}}, 1, 32]
// CHECK-NEXT:   npu_graph.attention %[[Q]], %[[K]], %[[V]] {scale = 0.176776692 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>, online}
// CHECK:        npu_tile.store %{{.*}}[%d0, {{[0-9]+}} * %d1, %d2, 32 * %d3] sizes [1, {{[0-9]+}}, 1, 32]

// SIM: check:       ok vs numpy float64 reference
