// RUN: %opt %s -p npu-fuse -o %t.mlir && filecheck %s < %t.mlir
// RUN: %opt %s -p npu-fuse,npu-split-rows,npu-tile,npu-tile-loops -o %t2.mlir && filecheck %s --check-prefix=LOOP < %t2.mlir
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// `matmul-prologue` when the scale, bias and weights are inputs, not constants:
// nothing folds, so each A tile is centred, normalised, scaled and shifted in SRAM
// (layernorm_apply with the scale and bias), whose windows follow the tile's columns
// (k) and the statistics' its rows (m); the tile loop loads them with the tile, in
// blocks of 32 of the 256 columns. The run matches numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x256x256xf32>, %g: tensor<256xf32>, %b: tensor<256xf32>, %w: tensor<256x32xf32>) -> tensor<1x256x32xf32> attributes {npu.inputs = ["x", "g", "b", "w"], npu.outputs = ["y"]} {
    %h = npu_graph.layernorm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1x256x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<1x256x256xf32> loc("ln")
    %y = npu_graph.matmul %h, %w : (tensor<1x256x256xf32>, tensor<256x32xf32>) -> tensor<1x256x32xf32> loc("proj")
    func.return %y : tensor<1x256x32xf32>
  }
}
// CHECK:       %[[S:.*]] = npu_graph.row_stats %x {kind = "moments"}
// CHECK:       npu_graph.fused(%x, %[[S]], %g, %b, %w) {kernel = "proj", rule = "matmul-prologue"}
// CHECK-NEXT:  ^bb0(%[[X:.*]]: tensor<1x256x256xf32>, %[[ST:.*]]: tensor<1x256x3xf32>, %[[G:.*]]: tensor<256xf32>, %[[B:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<256x32xf32>):
// CHECK-NEXT:    %[[N:.*]] = npu_graph.layernorm_apply %[[X]], %[[ST]], %[[G]], %[[B]] {epsilon = 1.000000e-05 : f32}
// CHECK-NEXT:    npu_graph.matmul %[[N]], %[[W]]
// LOOP:        npu_tile.kernel "proj"(%x, %{{.*}}, %g, %b, %w) matmul {loops = ["b0", "m", "n", "k"], tile = array<i64: 1, 64, 32, 32>, grid = array<i64: 1, 4, 1, 8>
// LOOP:          ^bb0(%b0: index, %m: index, %n: index, %k: index):
// LOOP-NEXT:       %[[XT:.*]] = npu_tile.load %{{.*}}(%b0, %m, %n, %k)[0, 64 * %m, 32 * %k] sizes [1, 64, 32] pad 0.0 : tensor<1x256x256xf32>
// LOOP-NEXT:       %[[WT:.*]] = npu_tile.load %{{.*}}(%b0, %m, %n, %k)[0, 32 * %k, 32 * %n] sizes [1, 32, 32] view [1, 256, 32] pad 0.0
// LOOP-NEXT:       %[[STT:.*]] = npu_tile.load %{{.*}}(%b0, %m, %n, %k)[0, 64 * %m, 0] sizes [1, 64, 3] pad 1.0 : tensor<1x256x3xf32>
// LOOP-NEXT:       %[[GT:.*]] = npu_tile.load %{{.*}}(%b0, %m, %n, %k)[32 * %k] sizes [32] pad 0.0 : tensor<256xf32>
// LOOP-NEXT:       %[[BT:.*]] = npu_tile.load %{{.*}}(%b0, %m, %n, %k)[32 * %k] sizes [32] pad 0.0 : tensor<256xf32>
// LOOP-NEXT:       %[[NT:.*]] = npu_graph.layernorm_apply %[[XT]], %[[STT]], %[[GT]], %[[BT]]
// LOOP-NEXT:       npu_graph.matmul %[[NT]], %[[WT]]
// SIM: check:       ok vs numpy float64 reference
