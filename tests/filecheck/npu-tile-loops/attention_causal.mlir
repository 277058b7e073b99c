// RUN: %opt %s -p npu-tile,npu-tile-loops | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// A causal attention (npu-fuse turns GPT-2's where(tril, s, min) into `causal`): the
// mask is the rows' limits %qlim [S, 1] and the keys' positions %kpos [1, T], not
// [S, T] values. On 8 KiB of SRAM the keys come in blocks of 16 (t, online
// softmax): a tile loads the limits of its 16 query rows (they follow d2) and the
// positions of its key block (they follow t, like k and v), 128 bytes instead of
// a 16 x 16 block of the dense mask. The run matches numpy (with 32 keys and 32
// queries, key blocks above the diagonal are wholly masked: their state adds nothing).
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 8192>} {
  func.func @main(%q: tensor<1x2x32x16xf32>, %kt: tensor<1x2x16x32xf32>, %v: tensor<1x2x32x16xf32>) -> tensor<1x2x32x16xf32> attributes {npu.inputs = ["q", "kt", "v"], npu.outputs = ["o"]} {
    %qlim = npu_graph.constant {value = dense<[[[[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0], [8.0], [9.0], [10.0], [11.0], [12.0], [13.0], [14.0], [15.0], [16.0], [17.0], [18.0], [19.0], [20.0], [21.0], [22.0], [23.0], [24.0], [25.0], [26.0], [27.0], [28.0], [29.0], [30.0], [31.0]]]]> : tensor<1x1x32x1xf32>} : tensor<1x1x32x1xf32>
    %kpos = npu_graph.constant {value = dense<[[[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]]]> : tensor<1x1x1x32xf32>} : tensor<1x1x1x32xf32>
    %o = npu_graph.attention %q, %kt, %v, %qlim, %kpos {scale = 0.25 : f32, causal = -3.40282347e+38 : f32} : (tensor<1x2x32x16xf32>, tensor<1x2x16x32xf32>, tensor<1x2x32x16xf32>, tensor<1x1x32x1xf32>, tensor<1x1x1x32xf32>) -> tensor<1x2x32x16xf32> loc("attn")
    func.return %o : tensor<1x2x32x16xf32>
  }
}
// CHECK:      npu_tile.kernel "attn"(%q, %kt, %v, %qlim, %kpos) apply {loops = ["d0", "d1", "d2", "d3", "t"], tile = array<i64: 1, 1, 16, 16, 16>
// CHECK:        npu_tile.loop {loops = ["d0", "d1", "d2", "d3", "t"]
// CHECK-NEXT:   ^bb0(%d0: index, %d1: index, %d2: index, %d3: index, %t: index):
// CHECK-NEXT:     %[[Q:.*]] = npu_tile.load %0(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 16 * %d2, 0] sizes [1, 1, 16, 16]
// CHECK-NEXT:     %[[K:.*]] = npu_tile.load %1(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 0, 16 * %t] sizes [1, 1, 16, 16]
// CHECK-NEXT:     %[[V:.*]] = npu_tile.load %2(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 16 * %t, 0] sizes [1, 1, 16, 16]
// CHECK-NEXT:     %[[L:.*]] = npu_tile.load %3(%d0, %d1, %d2, %d3, %t)[%d0, 0, 16 * %d2, 0] sizes [1, 1, 16, 1]
// CHECK-NEXT:     %[[P:.*]] = npu_tile.load %4(%d0, %d1, %d2, %d3, %t)[%d0, 0, 0, 16 * %t] sizes [1, 1, 1, 16]
// CHECK-NEXT:     %[[A:.*]] = npu_graph.attention %[[Q]], %[[K]], %[[V]], %[[L]], %[[P]] {scale = 2.500000e-01 : f32, causal = -3.40282347e+38 : f32, online}
// CHECK-NEXT:     npu_tile.reduce %[[A]] {combine = "online_softmax"}

// SIM: check:       ok vs numpy float64 reference
