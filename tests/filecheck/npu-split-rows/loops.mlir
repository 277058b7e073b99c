// RUN: %opt %s -p npu-split-rows,npu-tile,npu-tile-loops | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// The row statistics get a column loop `c` (a reduction): each 512-column block's
// state merges into the row's (`combine = "row_stats"`); a softmax block past the
// row's end reads -inf (no weight). The moments' blocks divide the row. The whole
// program matches numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 2, sram_bytes = 8192>} {
  func.func @main(%x: tensor<4x3000xf32>, %y: tensor<4x2048xf32>) -> (tensor<4x3000xf32>, tensor<4x2048xf32>) attributes {npu.inputs = ["x", "y"], npu.outputs = ["s", "l"]} {
    %s = npu_graph.softmax %x {axis = -1 : i64} : (tensor<4x3000xf32>) -> tensor<4x3000xf32> loc("sm")
    %g = npu_graph.constant {value = dense<1.5> : tensor<2048xf32>} : tensor<2048xf32>
    %b = npu_graph.constant {value = dense<0.25> : tensor<2048xf32>} : tensor<2048xf32>
    %l = npu_graph.layernorm %y, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x2048xf32>, tensor<2048xf32>, tensor<2048xf32>) -> tensor<4x2048xf32> loc("ln")
    func.return %s, %l : tensor<4x3000xf32>, tensor<4x2048xf32>
  }
}
// CHECK:      npu_tile.loop {loops = ["d0", "d1", "c"], tile = array<i64: 2, 2, 512>, grid = array<i64: 2, 1, 6>, reductions = 1 : i64}
// CHECK-NEXT: ^bb0(%d0: index, %d1: index, %c: index):
// CHECK-NEXT:   %[[X:.*]] = npu_tile.load %0(%d0, %d1, %c)[2 * %d0, 512 * %c] sizes [2, 512] pad -inf
// CHECK-NEXT:   %[[S:.*]] = npu_graph.row_stats %[[X]] {kind = "softmax"} : (tensor<2x512xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:   %[[R:.*]] = npu_tile.reduce %[[S]] {combine = "row_stats"} : tensor<2x2xf32> -> tensor<2x2xf32>
// CHECK-NEXT:   npu_tile.store %[[R]](%d0, %d1, %c)[2 * %d0, 2 * %d1] sizes [2, 2]
// CHECK:      npu_graph.softmax_apply
// CHECK:      npu_tile.loop {loops = ["d0", "d1", "c"], tile = array<i64: 2, 3, 512>, grid = array<i64: 2, 1, 4>, reductions = 1 : i64}
// CHECK:        npu_tile.load %{{.*}}(%{{.*}})[2 * %{{.*}}, 512 * %{{.*}}] sizes [2, 512] :
// CHECK-NEXT:   npu_graph.row_stats %{{.*}} {kind = "moments"} : (tensor<2x512xf32>) -> tensor<2x3xf32>
// CHECK:      npu_graph.layernorm_apply

// SIM: check:       ok vs numpy float64 reference
