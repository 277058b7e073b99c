// RUN: %opt %s --split-input-file -p npu-tile | filecheck %s

// An elementwise chain with a LayerNorm in its epilogue (npu-fuse's eltwise-chain):
// tiles cut the rows but keep the normalised dim whole (`row_dims`), and the
// LayerNorm runs on each tile with its scale and bias loaded whole.
builtin.module attributes {npu.arch = #npu.arch<cores = 2>} {
  func.func @main(%a: tensor<1024x256xf32>, %b: tensor<1024x256xf32>, %g: tensor<256xf32>) -> tensor<1024x256xf32> {
    %y = npu_graph.fused(%a, %b, %g) {kernel = "res_ln", rule = "eltwise-chain"} : (tensor<1024x256xf32>, tensor<1024x256xf32>, tensor<256xf32>) -> tensor<1024x256xf32> {
    ^bb0(%x: tensor<1024x256xf32>, %r: tensor<1024x256xf32>, %s: tensor<256xf32>):
      %sum = npu_graph.add %x, %r : (tensor<1024x256xf32>, tensor<1024x256xf32>) -> tensor<1024x256xf32>
      %ln = npu_graph.layernorm %sum, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<1024x256xf32>, tensor<256xf32>) -> tensor<1024x256xf32>
      npu_graph.yield %ln : tensor<1024x256xf32>
    }
    func.return %y : tensor<1024x256xf32>
  }
}
// CHECK:      npu_tile.kernel "res_ln"(%a, %b, %g) eltwise {loops = ["d0", "d1"], tile = array<i64: 128, 256>, grid = array<i64: 8, 1>
// CHECK:        npu_graph.add
// CHECK-NEXT:   npu_graph.layernorm %sum, %2 {axis = 1 : i64, epsilon = 1.000000e-05 : f32}
