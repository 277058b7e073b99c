// RUN: %opt %s --split-input-file --verify-diagnostics -p npu-tile-loops | filecheck %s

// A plan whose loops are not the kernel's (a matmul's are m,n,k) is named, with
// the kernel and its ONNX node.
builtin.module {
  func.func @main(%x: tensor<4x32xf32>, %w: tensor<32x16xf32>) -> tensor<4x16xf32> {
    %y = npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n"], tile = array<i64: 4, 16>, grid = array<i64: 1, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 1 : i64} : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x32xf32>, %b: tensor<32x16xf32>):
      %g = npu_graph.matmul %a, %b : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
      npu_tile.yield %g : tensor<4x16xf32>
    } loc("mm_node")
    func.return %y : tensor<4x16xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'mm': loops 'm,n' do not match a matmul kernel (m,n,k) at 'npu_tile.kernel' (ONNX node mm_node)

// -----

// Trip counts that the tile sizes do not give.
builtin.module {
  func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %y = npu_tile.kernel "act"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 64>, grid = array<i64: 3, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>):
      %t = npu_graph.tanh %a : (tensor<8x64xf32>) -> tensor<8x64xf32>
      npu_tile.yield %t : tensor<8x64xf32>
    }
    func.return %y : tensor<8x64xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'act': grid [3, 1] does not match the tile sizes (expected [2, 1])
