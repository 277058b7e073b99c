// RUN: npu-run %s --check 2>&1 | filecheck %s
// RUN: %opt %s -p npu-tile,npu-tile-loops | filecheck %s --check-prefix=LOOP

// A conv + shortcut + relu whose sum over input-channel steps starts from the
// shortcut tile (npu-tile-loops/reduce_init.mlir), run with the sanitizer: the
// result matches numpy.
// LOOP: npu_tile.reduce %{{[0-9]+}} init %{{[0-9]+}}
// CHECK: check:       ok vs numpy float64 reference
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 16384>} {
  func.func @conv_residual(%x: tensor<1x64x8x8xf32>, %r: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> attributes {npu.inputs = ["x", "r"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.125> : tensor<16x64x3x3xf32>} : tensor<16x64x3x3xf32>
    %0 = npu_graph.fused(%x, %w, %r) {kernel = "block", rule = "conv-epilogue"} : (tensor<1x64x8x8xf32>, tensor<16x64x3x3xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
    ^bb0(%a: tensor<1x64x8x8xf32>, %b: tensor<16x64x3x3xf32>, %s: tensor<1x16x8x8xf32>):
      %1 = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x8x8xf32>, tensor<16x64x3x3xf32>) -> tensor<1x16x8x8xf32>
      %2 = npu_graph.add %1, %s : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
      %3 = npu_graph.relu %2 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
      npu_graph.yield %3 : tensor<1x16x8x8xf32>
    }
    func.return %0 : tensor<1x16x8x8xf32>
  }
}
