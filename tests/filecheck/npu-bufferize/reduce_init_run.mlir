// RUN: npu-run %s --check 2>&1 | filecheck %s
// RUN: %opt %s -p npu-tile,npu-tile-loops | filecheck %s --check-prefix=LOOP

// A matmul + bias + residual whose sum starts from the residual tile (see
// npu-tile-loops/reduce_init.mlir), run on the simulator with the sanitizer: the
// accumulator holds the residual before the first product lands on it; the result
// matches numpy.
// LOOP: npu_tile.reduce %{{[0-9]+}} init %{{[0-9]+}}
// CHECK: check:       ok vs numpy float64 reference
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%a: tensor<64x512xf32>, %r: tensor<64x128xf32>) -> tensor<64x128xf32> attributes {npu.inputs = ["a", "r"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<512x128xf32>} : tensor<512x128xf32>
    %b = npu_graph.constant {value = dense<0.25> : tensor<128xf32>} : tensor<128xf32>
    %0 = npu_graph.fused(%a, %w, %b, %r) {kernel = "ffn", rule = "matmul-epilogue"} : (tensor<64x512xf32>, tensor<512x128xf32>, tensor<128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32> {
    ^bb0(%x: tensor<64x512xf32>, %y: tensor<512x128xf32>, %z: tensor<128xf32>, %s: tensor<64x128xf32>):
      %1 = npu_graph.matmul %x, %y : (tensor<64x512xf32>, tensor<512x128xf32>) -> tensor<64x128xf32>
      %2 = npu_graph.add %1, %z : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
      %3 = npu_graph.add %2, %s : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
      npu_graph.yield %3 : tensor<64x128xf32>
    }
    func.return %0 : tensor<64x128xf32>
  }
}
