// RUN: %opt %s -p npu-tile-loops | filecheck %s

// A kernel whose parallel loops the tile search put n outside m (`ordered`: b's
// 16-column tiles stay put over the steps along m): the loop takes its loops in
// the kernel's order, the windows keyed by name.
// CHECK:      npu_tile.loop {loops = ["n", "m", "k"], tile = array<i64: 16, 4, 32>, grid = array<i64: 4, 2, 1>, reductions = 1 : i64, double_buffer}
// CHECK-NEXT: ^bb0(%n: index, %m: index, %k: index):
// CHECK-NEXT:   npu_tile.load %a(%n, %m, %k)[4 * %m, 32 * %k] sizes [4, 32]
// CHECK-NEXT:   npu_tile.load %b(%n, %m, %k)[32 * %k, 16 * %n] sizes [32, 16]
// CHECK:        npu_tile.store %{{.*}}(%n, %m, %k)[4 * %m, 16 * %n] sizes [4, 16]
builtin.module {
  func.func @main(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> attributes {npu.inputs = ["x", "w"], npu.outputs = ["y"]} {
    %y = npu_tile.kernel "mm"(%x, %w) matmul {loops = ["n", "m", "k"], tile = array<i64: 16, 4, 32>, grid = array<i64: 4, 2, 1>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 1 : i64} : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x32xf32>, %b: tensor<32x64xf32>):
      %g = npu_graph.matmul %a, %b : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
      npu_tile.yield %g : tensor<8x64xf32>
    }
    func.return %y : tensor<8x64xf32>
  }
}
