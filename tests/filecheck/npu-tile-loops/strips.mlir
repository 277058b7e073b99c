// RUN: %opt %s --split-input-file --verify-diagnostics -p npu-tile-loops | filecheck %s
// RUN: %opt %s --split-input-file --verify-diagnostics -p npu-tile-loops,npu-tile-loops | filecheck %s --check-prefix=TWICE

// A strip group (conv 3x3 + relu + max-pool 3x3/2, strips of 3 pooled rows): one
// npu_tile.strip_loop. Per strip s it loads the input's 9 rows from 6s - 2 (a halo of 2
// above and 1 below the 6 rows a step covers, padded with 0), runs the conv and the pool
// on strip-shaped tensors padded along W only (7 conv rows, 3 pooled rows) and stores
// the 3 output rows at 3s. The whole-tensor ops stay in the loop's group region.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x32x32xf32>) -> tensor<1x16x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xf32>
    %b = npu_graph.constant {weight = "b"} : tensor<16xf32>
    %p = npu_tile.kernel "conv..pool"(%x, %w, %b) group {loops = ["h"], tile = array<i64: 3>, grid = array<i64: 6>, double_buffer = false, sram_bytes = 31424 : i64, predicted_cycles = 2502 : i64, plan = #npu_tile.strip<rows = 3, strips = 6, halo = [2, 1], sram = 31424>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32> {
    ^bb0(%0: tensor<1x8x32x32xf32>, %1: tensor<16x8x3x3xf32>, %2: tensor<16xf32>):
      %c = npu_graph.conv2d %0, %1, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x32x32xf32>
      %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      %p_1 = npu_graph.maxpool %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32>
      npu_tile.yield %p_1 : tensor<1x16x16x16xf32>
    }
    func.return %p : tensor<1x16x16x16xf32>
  }
}
// CHECK:      ^bb0(%[[X:.*]]: tensor<1x8x32x32xf32>, %[[W:.*]]: tensor<16x8x3x3xf32>, %[[B:.*]]: tensor<16xf32>):
// CHECK-NEXT:   %[[L:.*]] = npu_tile.strip_loop {rows = 3 : i64, strips = 6 : i64, plan = #npu_tile.strip<rows = 3, strips = 6, halo = [2, 1], sram = 31424>} -> tensor<1x16x16x16xf32> {
// CHECK-NEXT:   ^bb{{.*}}(%[[S:.*]]: index):
// CHECK-NEXT:     %[[XS:.*]] = npu_tile.load %[[X]](%[[S]])[0, 0, 6 * %[[S]] - 2, 0] sizes [1, 8, 9, 32] pad 0.0
// CHECK-NEXT:     %[[C:.*]] = npu_graph.conv2d %[[XS]], %[[W]], %[[B]] {pads = array<i64: 0, 1, 0, 1>} : (tensor<1x8x9x32xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x7x32xf32>
// CHECK-NEXT:     %[[R:.*]] = npu_graph.relu %[[C]] : (tensor<1x16x7x32xf32>) -> tensor<1x16x7x32xf32>
// CHECK-NEXT:     %[[P:.*]] = npu_graph.maxpool %[[R]] {{{.*}}pads = array<i64: 0, 1, 0, 1>} : (tensor<1x16x7x32xf32>) -> tensor<1x16x3x16xf32>
// CHECK-NEXT:     npu_tile.store %[[P]](%[[S]])[0, 0, 3 * %[[S]], 0] sizes [1, 16, 3, 16] : tensor<1x16x3x16xf32>
// CHECK-NEXT:   } group {
// CHECK-NEXT:     npu_graph.conv2d %[[X]], %[[W]], %[[B]] {pads = array<i64: 1, 1, 1, 1>}
// CHECK:        npu_tile.yield %[[L]]
// TWICE:        npu_tile.strip_loop
// TWICE-NOT:    npu_tile.strip_loop
// TWICE:        npu_tile.load
// TWICE-NOT:    npu_tile.load
// TWICE:        func.return

// -----

// A residual from outside the group (a side input) is loaded per strip at the rows its
// add computes, after the conv it adds to.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>, %q: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x16x3x3xf32>
    %d = npu_tile.kernel "conv..res"(%x, %w, %q) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 16>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, plan = #npu_tile.strip<rows = 2, strips = 16, halo = [1, 1], sram = 25600>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%a: tensor<1x16x32x32xf32>, %b: tensor<16x16x3x3xf32>, %r: tensor<1x16x32x32xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      %t = npu_graph.add %c, %r : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %t : tensor<1x16x32x32xf32>
    }
    func.return %d : tensor<1x16x32x32xf32>
  }
}
// CHECK:      ^bb0(%[[A:.*]]: tensor<1x16x32x32xf32>, %[[WB:.*]]: tensor<16x16x3x3xf32>, %[[Q:.*]]: tensor<1x16x32x32xf32>):
// CHECK:        ^bb{{.*}}(%[[S:.*]]: index):
// CHECK-NEXT:     %[[XS:.*]] = npu_tile.load %[[A]](%[[S]])[0, 0, 2 * %[[S]] - 1, 0] sizes [1, 16, 4, 32] pad 0.0
// CHECK-NEXT:     %[[C:.*]] = npu_graph.conv2d %[[XS]], %[[WB]] {pads = array<i64: 0, 1, 0, 1>} : {{.*}} -> tensor<1x16x2x32xf32>
// CHECK-NEXT:     %[[QS:.*]] = npu_tile.load %[[Q]](%[[S]])[0, 0, 2 * %[[S]], 0] sizes [1, 16, 2, 32] pad 0.0
// CHECK-NEXT:     %[[T:.*]] = npu_graph.add %[[C]], %[[QS]]
// CHECK-NEXT:     npu_tile.store %[[T]](%[[S]])[0, 0, 2 * %[[S]], 0] sizes [1, 16, 2, 32]

// -----

// A value two readers need at different rows: the 1x1 conv path's rows are the middle of
// the input's (the 3x3 conv's halo), read through a slice of the strip's input rows.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x4x16x16xf32>, %w1: tensor<8x4x1x1xf32>, %w3: tensor<8x4x3x3xf32>) -> tensor<1x16x16x16xf32> {
    %y = npu_tile.kernel "fire"(%x, %w1, %w3) group {loops = ["h"], tile = array<i64: 8>, grid = array<i64: 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, plan = #npu_tile.strip<rows = 8, strips = 2, halo = [1, 1], sram = 12032>} : (tensor<1x4x16x16xf32>, tensor<8x4x1x1xf32>, tensor<8x4x3x3xf32>) -> tensor<1x16x16x16xf32> {
    ^bb0(%0: tensor<1x4x16x16xf32>, %1: tensor<8x4x1x1xf32>, %2: tensor<8x4x3x3xf32>):
      %e1 = npu_graph.conv2d %0, %1 : (tensor<1x4x16x16xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x16x16xf32>
      %e3 = npu_graph.conv2d %0, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x16x16xf32>
      %c = npu_graph.concat %e1, %e3 {axis = 1 : i64} : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x16x16x16xf32>
      npu_tile.yield %c : tensor<1x16x16x16xf32>
    }
    func.return %y : tensor<1x16x16x16xf32>
  }
}
// CHECK:      npu_tile.strip_loop
// CHECK:        %[[XS:.*]] = npu_tile.load %{{.*}}[0, 0, 8 * %{{.*}} - 1, 0] sizes [1, 4, 10, 16] pad 0.0
// CHECK-NEXT:   %[[MID:.*]] = npu_graph.slice %[[XS]] {starts = array<i64: 0, 0, 1, 0>, ends = array<i64: 1, 4, 9, 16>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x4x10x16xf32>) -> tensor<1x4x8x16xf32>
// CHECK-NEXT:   %[[E1:.*]] = npu_graph.conv2d %[[MID]], %{{.*}} {pads = array<i64: 0, 0, 0, 0>} : {{.*}} -> tensor<1x8x8x16xf32>
// CHECK-NEXT:   %[[E3:.*]] = npu_graph.conv2d %[[XS]], %{{.*}} {pads = array<i64: 0, 1, 0, 1>} : {{.*}} -> tensor<1x8x8x16xf32>
// CHECK-NEXT:   npu_graph.concat %[[E1]], %[[E3]] {axis = 1 : i64} : {{.*}} -> tensor<1x16x8x16xf32>

// -----

// Line buffers: the input loads only its 2 new rows (2s + 2), an npu_tile.line_buffer
// stands for the 4 rows a strip holds; the relu's 2 new rows likewise.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 12288>} {
  func.func @main(%x: tensor<1x8x16x16xf32>, %w0: tensor<8x8x3x3xf32>, %w1: tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32> {
    %y = npu_tile.kernel "c0..c1"(%x, %w0, %w1) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 8>, double_buffer = false, sram_bytes = 9792 : i64, predicted_cycles = 3432 : i64, line_buffer, plan = #npu_tile.strip<rows = 2, strips = 8, halo = [0, 2], sram = 9792, line_buffer, warm = 2>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32> {
    ^bb0(%0: tensor<1x8x16x16xf32>, %1: tensor<8x8x3x3xf32>, %2: tensor<8x8x3x3xf32>):
      %a = npu_graph.conv2d %0, %1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
      %r = npu_graph.relu %a : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
      %y_1 = npu_graph.conv2d %r, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
      npu_tile.yield %y_1 : tensor<1x8x16x16xf32>
    }
    func.return %y : tensor<1x8x16x16xf32>
  }
}
// CHECK:      npu_tile.strip_loop {{.*}}line_buffer, warm = 2>}
// CHECK:        %[[NEW:.*]] = npu_tile.load %{{.*}}[0, 0, 2 * %{{.*}} + 2, 0] sizes [1, 8, 2, 16] pad 0.0
// CHECK-NEXT:   %[[XB:.*]] = npu_tile.line_buffer %[[NEW]] : tensor<1x8x2x16xf32> -> tensor<1x8x4x16xf32>
// CHECK-NEXT:   %[[A:.*]] = npu_graph.conv2d %[[XB]], {{.*}} -> tensor<1x8x2x16xf32>
// CHECK-NEXT:   %[[R:.*]] = npu_graph.relu %[[A]]
// CHECK-NEXT:   %[[RB:.*]] = npu_tile.line_buffer %[[R]] : tensor<1x8x2x16xf32> -> tensor<1x8x4x16xf32>
// CHECK-NEXT:   npu_graph.conv2d %[[RB]], {{.*}} -> tensor<1x8x2x16xf32>

// -----

// Must not fire: a layer group without loops (a #npu_tile.group plan) gets no strip
// loop, only its whole-tensor loads (groups.mlir).
builtin.module {
  func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
    %g = npu_tile.kernel "grp"(%x) group {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, plan = #npu_tile.group<sram = 512, offsets = [0, 256]>} : (tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%b: tensor<64xf32>):
      %e = npu_graph.exp %b : (tensor<64xf32>) -> tensor<64xf32>
      npu_tile.yield %e : tensor<64xf32>
    }
    func.return %g : tensor<64xf32>
  }
}
// CHECK-NOT:  npu_tile.strip_loop
// CHECK:      npu_tile.kernel "grp"
// CHECK-NEXT: ^bb0(%b: tensor<64xf32>):
// CHECK-NEXT:   %[[B:.*]] = npu_tile.load %b()[0] sizes [64]
// CHECK-NEXT:   npu_graph.exp %[[B]]
// CHECK-NOT:  npu_tile.strip_loop

// -----

// Error: a plan whose halo and SRAM are not what its strips give.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x32x32xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32> {
    %y = npu_tile.kernel "conv..relu"(%x, %w) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 16>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, plan = #npu_tile.strip<rows = 2, strips = 16, halo = [2, 2], sram = 16384>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32> {
    ^bb0(%a: tensor<1x8x32x32xf32>, %b: tensor<16x8x3x3xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32>
      %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %r : tensor<1x16x32x32xf32>
    } loc("conv..relu")
    func.return %y : tensor<1x16x32x32xf32>
  }
}
// CHECK: error: npu-tile-loops: kernel 'conv..relu': its plan #npu_tile.strip<rows = 2, strips = 16, halo = [2, 2], sram = 16384> does not match its ops: halo = [2, 2] (its strips give [1, 1]), sram = 16384 (its strips give {{[0-9]+}}) at 'npu_tile.kernel' (ONNX node conv..relu)
