// RUN: %opt %s -p npu-tile,npu-tile-loops | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// Attention reading q, k and v as heads 0..3, 4..7 and 8..11 of one [B, S, 12, D]
// tensor (`head_window`, GPT-2's c_attn output seen as heads) in 16 KiB of SRAM with
// key blocks: every window's head index starts at its operand's offset, the tile op
// has no window of its own; the run matches numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 2, sram_bytes = 16384>} {
  func.func @main(%qkv: tensor<1x64x12x32xf32>) -> tensor<1x64x4x32xf32> attributes {npu.inputs = ["qkv"], npu.outputs = ["o"]} {
    %o = npu_graph.attention %qkv, %qkv, %qkv {scale = 0.176776692 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>, head_window = array<i64: 0, 4, 8, 4>} : (tensor<1x64x12x32xf32>, tensor<1x64x12x32xf32>, tensor<1x64x12x32xf32>) -> tensor<1x64x4x32xf32> loc("attn")
    func.return %o : tensor<1x64x4x32xf32>
  }
}
// CHECK:      npu_tile.loop {loops = ["d0", "d1", "d2", "d3", "t"]
// CHECK-NEXT: ^bb0(%d0: index, %d1: index, %d2: index, %d3: index, %t: index):
// CHECK-NEXT:   %[[Q:.*]] = npu_tile.load %0(%d0, %d1, %d2, %d3, %t)[%d0, {{[0-9]+}} * %d1, %d2, 0] sizes [1, {{[0-9]+}}, 1, 32]
// CHECK-NEXT:   %[[K:.*]] = npu_tile.load %0(%d0, %d1, %d2, %d3, %t)[%d0, {{[0-9]+}} * %t, %d2 + 4, 0] sizes [1, {{[0-9]+}}, 1, 32]
// CHECK-NEXT:   %[[V:.*]] = npu_tile.load %0(%d0, %d1, %d2, %d3, %t)[%d0, {{[0-9]+}} * %t, %d2 + 8, 0] sizes [1, {{[0-9]+}}, 1, 32]
// CHECK-NEXT:   npu_graph.attention %[[Q]], %[[K]], %[[V]] {scale = 0.176776692 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>, online}

// SIM: check:       ok vs numpy float64 reference
