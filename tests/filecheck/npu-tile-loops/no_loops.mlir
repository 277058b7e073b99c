// RUN: %opt %s --split-input-file -p npu-tile-loops | filecheck %s
// RUN: %opt %s --split-input-file -p npu-tile-loops,npu-tile-loops | filecheck %s --check-prefix=TWICE

// A view kernel (a reshape) keeps its body: it moves no data. A layer group keeps
// its ops (each runs once on whole SRAM-resident tensors) and gains its loads, no
// loop; a second run adds none.
builtin.module {
  func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %v = npu_tile.kernel "flat"(%x) view {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64} : (tensor<4x16xf32>) -> tensor<64xf32> {
    ^bb0(%a: tensor<4x16xf32>):
      %r = npu_graph.reshape %a : (tensor<4x16xf32>) -> tensor<64xf32>
      npu_tile.yield %r : tensor<64xf32>
    }
    %g = npu_tile.kernel "grp"(%v) group {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, plan = #npu_tile.group<sram = 512, offsets = [0, 256, 256]>} : (tensor<64xf32>) -> tensor<4x16xf32> {
    ^bb0(%b: tensor<64xf32>):
      %e = npu_graph.exp %b : (tensor<64xf32>) -> tensor<64xf32>
      %s = npu_graph.reshape %e : (tensor<64xf32>) -> tensor<4x16xf32>
      npu_tile.yield %s : tensor<4x16xf32>
    }
    func.return %g : tensor<4x16xf32>
  }
}
// CHECK-NOT:  npu_tile.loop
// CHECK:      npu_tile.kernel "flat"
// CHECK-NEXT: ^bb0(%a: tensor<4x16xf32>):
// CHECK-NEXT:   npu_graph.reshape %a
// CHECK:      npu_tile.kernel "grp"
// CHECK-NEXT: ^bb0(%b: tensor<64xf32>):
// CHECK-NEXT:   %[[B:.*]] = npu_tile.load %b()[0] sizes [64] : tensor<64xf32>
// CHECK-NEXT:   npu_graph.exp %[[B]]
// CHECK-NEXT:   npu_graph.reshape
// CHECK-NOT:  npu_tile.loop
// CHECK:      {{^}}// {{-+}}
// TWICE:      npu_tile.kernel "grp"
// TWICE-NEXT: ^bb0(%b: tensor<64xf32>):
// TWICE-NEXT:   npu_tile.load %b()
// TWICE-NEXT:   npu_graph.exp

// -----

// A kernel already in loop form is left as it is: running the pass twice gives one loop.
builtin.module {
  func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %y = npu_tile.kernel "act"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 64>, grid = array<i64: 2, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>):
      %t = npu_graph.tanh %a : (tensor<8x64xf32>) -> tensor<8x64xf32>
      npu_tile.yield %t : tensor<8x64xf32>
    }
    func.return %y : tensor<8x64xf32>
  }
}
// TWICE:     npu_tile.loop
// TWICE-NOT: npu_tile.loop
// TWICE:     npu_tile.load %a(%d0, %d1)[4 * %d0, 64 * %d1] sizes [4, 64]
// TWICE-NOT: npu_tile.load
// TWICE:     npu_graph.tanh
