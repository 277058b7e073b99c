// RUN: %opt %s -p npu-fuse,npu-tile,npu-tile-loops | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// A decoder step's attention over the KV cache with the new rows appended (npu-fuse's
// `kv-append`), in 16 KiB of SRAM: the key blocks (t, 16 rows) read the past's
// block and the new rows' block, both zero-padded (the block at rows 48..63 spans
// the seam: 15 past rows, then the new one), and their sum goes to the present
// cache every step (`npu_tile.tee into 1` and `into 2`, the loop's second and third
// results) as well as into the attention; the run matches numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 16384>} {
  func.func @main(%q: tensor<2x4x1x32xf32>, %pk: tensor<2x4x63x32xf32>, %nk: tensor<2x4x1x32xf32>, %pv: tensor<2x4x63x32xf32>, %nv: tensor<2x4x1x32xf32>) -> (tensor<2x4x1x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) attributes {npu.inputs = ["q", "past_key", "new_key", "past_value", "new_value"], npu.outputs = ["o", "present_key", "present_value"]} {
    %k = npu_graph.concat %pk, %nk {axis = 2 : i64} : (tensor<2x4x63x32xf32>, tensor<2x4x1x32xf32>) -> tensor<2x4x64x32xf32> loc("k")
    %v = npu_graph.concat %pv, %nv {axis = 2 : i64} : (tensor<2x4x63x32xf32>, tensor<2x4x1x32xf32>) -> tensor<2x4x64x32xf32> loc("v")
    %o = npu_graph.attention %q, %k, %v {scale = 0.176776692 : f32, key_rows} : (tensor<2x4x1x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) -> tensor<2x4x1x32xf32> loc("attn")
    func.return %o, %k, %v : tensor<2x4x1x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>
  }
}
// CHECK:      %o, %k, %v = npu_tile.kernel "attn"(%pk, %nk, %pv, %nv, %q) apply {loops = ["d0", "d1", "d2", "d3", "t"], tile = array<i64: 1, 2, 1, 32, 16>, grid = array<i64: 2, 2, 1, 1, 4>
// CHECK:        %{{.*}}, %{{.*}}, %{{.*}} = npu_tile.loop {{.*}} -> tensor<2x4x1x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> {
// CHECK-NEXT:   ^bb0(%d0: index, %d1: index, %d2: index, %d3: index, %t: index):
// CHECK-NEXT:     %[[Q:.*]] = npu_tile.load %4(%d0, %d1, %d2, %d3, %t)[%d0, 2 * %d1, %d2, 0] sizes [1, 2, 1, 32]
// CHECK-NEXT:     %[[PK:.*]] = npu_tile.load %0(%d0, %d1, %d2, %d3, %t)[%d0, 2 * %d1, 16 * %t, 0] sizes [1, 2, 16, 32] pad 0.0 : tensor<2x4x63x32xf32>
// CHECK-NEXT:     %[[PV:.*]] = npu_tile.load %2(%d0, %d1, %d2, %d3, %t)[%d0, 2 * %d1, 16 * %t, 0] sizes [1, 2, 16, 32] pad 0.0 : tensor<2x4x63x32xf32>
// CHECK-NEXT:     %[[NK:.*]] = npu_tile.load %1(%d0, %d1, %d2, %d3, %t)[%d0, 2 * %d1, 16 * %t - 63, 0] sizes [1, 2, 16, 32] pad 0.0 : tensor<2x4x1x32xf32>
// CHECK-NEXT:     %[[NV:.*]] = npu_tile.load %3(%d0, %d1, %d2, %d3, %t)[%d0, 2 * %d1, 16 * %t - 63, 0] sizes [1, 2, 16, 32] pad 0.0 : tensor<2x4x1x32xf32>
// CHECK-NEXT:     %[[K:.*]] = npu_graph.add %[[PK]], %[[NK]]
// CHECK-NEXT:     npu_tile.tee %[[K]] into 1 (%d0, %d1, %d2, %d3, %t)[%d0, 2 * %d1, 16 * %t, 0] sizes [1, 2, 16, 32] view [2, 4, 64, 32]
// CHECK-NEXT:     %[[V:.*]] = npu_graph.add %[[PV]], %[[NV]]
// CHECK-NEXT:     npu_tile.tee %[[V]] into 2 (%d0, %d1, %d2, %d3, %t)[%d0, 2 * %d1, 16 * %t, 0] sizes [1, 2, 16, 32] view [2, 4, 64, 32]
// CHECK-NEXT:     %[[A:.*]] = npu_graph.attention %[[Q]], %[[K]], %[[V]] {scale = 0.176776692 : f32, key_rows, online}
// CHECK-NEXT:     %[[R:.*]] = npu_tile.reduce %[[A]] {combine = "online_softmax"}
// CHECK-NEXT:     npu_tile.store %[[R]]
// CHECK-NEXT:   }
// CHECK-NEXT:   npu_tile.yield %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x1x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>

// SIM: check:       ok vs numpy float64 reference
