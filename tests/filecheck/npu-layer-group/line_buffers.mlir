// RUN: %opt %s --split-input-file -p npu-tile,npu-layer-group | filecheck %s
// RUN: %opt %s --split-input-file -p 'npu-tile,npu-layer-group{line-buffers=never}' | filecheck %s --check-prefix=NEVER
// RUN: %opt %s --split-input-file -p 'npu-tile,npu-layer-group{line-buffers=always}' | filecheck %s --check-prefix=ALWAYS

// A DenseNet-like layer: conv 1x1 (32 -> 64) + relu, then a 3x3 conv reads it with a
// halo. Recomputing the halo, a strip of one row computes 3 rows of the 64-channel
// value and loads 3 input rows; with a line buffer it keeps the 2 rows it shares
// with the previous strip, computes 1 and loads 1 (dram_bytes over 4 cores, each loading
// the weights and running 2 warm-up strips: 524512 vs 1065536).
// The cost model takes the line buffer; with line-buffers=never the halo is recomputed.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 98304>} {
  func.func @main(%x: tensor<1x32x48x48xf32>) -> tensor<1x8x48x48xf32> {
    %w0 = npu_graph.constant {weight = "w0"} : tensor<64x32x1x1xf32>
    %w1 = npu_graph.constant {weight = "w1"} : tensor<8x64x3x3xf32>
    %a = npu_graph.conv2d %x, %w0 : (tensor<1x32x48x48xf32>, tensor<64x32x1x1xf32>) -> tensor<1x64x48x48xf32> loc("c0")
    %r = npu_graph.relu %a : (tensor<1x64x48x48xf32>) -> tensor<1x64x48x48xf32> loc("r0")
    %y = npu_graph.conv2d %r, %w1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x48x48xf32>, tensor<8x64x3x3xf32>) -> tensor<1x8x48x48xf32> loc("c1")
    func.return %y : tensor<1x8x48x48xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %y = npu_tile.kernel "c0..c1"(%x, %w0, %w1) group {loops = ["h"], tile = array<i64: 1>, grid = array<i64: 48>, double_buffer = true, {{.*}}dram_bytes = 524512 : i64, parts = 4 : i64, part_cycles = array<i64: {{.*}}>, line_buffer, plan = #npu_tile.strip<rows = 1, strips = 48, halo = [-1, 1], sram = 88192, prefetch, line_buffer, warm = 2>}
// CHECK-NEXT:  ^{{.*}}(%[[X:.*]]: tensor<1x32x48x48xf32>, %[[W0:.*]]: tensor<64x32x1x1xf32>, %[[W1:.*]]: tensor<8x64x3x3xf32>):
// CHECK-NEXT:    %[[A:.*]] = npu_graph.conv2d %[[X]], %[[W0]]
// CHECK-NEXT:    %[[R:.*]] = npu_graph.relu %[[A]]
// CHECK-NEXT:    %[[Y:.*]] = npu_graph.conv2d %[[R]], %[[W1]]
// CHECK-NEXT:    npu_tile.yield %[[Y]]

// NEVER-LABEL: func.func @main
// NEVER:       %y = npu_tile.kernel "c0..c1"(%x, %w0, %w1) group {loops = ["h"], tile = array<i64: 1>, grid = array<i64: 48>, {{.*}}dram_bytes = 1065536 : i64, parts = 4 : i64, part_cycles = array<i64: {{.*}}>, plan = #npu_tile.strip<rows = 1, strips = 48, halo = [1, 1], sram = 83520>}

// ALWAYS-LABEL: func.func @main
// ALWAYS:       %y = npu_tile.kernel "c0..c1"({{.*}}parts = 4 : i64, part_cycles = array<i64: {{.*}}>, line_buffer, plan = #npu_tile.strip<{{.*}}, line_buffer, warm = 2>}

// -----

// A stem (conv 3x3 + relu + max-pool 3x3/2 over an 8-channel input): its strips share
// rows of the input and of the relu, but what line buffers save here does not pay for
// the DMA latency of moving rows twice per strip, so the cost model recomputes the
// halo (no line_buffer); with line-buffers=always the group takes line buffers.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x32x32xf32>) -> tensor<1x16x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xf32>
    %c = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32> loc("conv")
    %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("relu")
    %p = npu_graph.maxpool %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32> loc("pool")
    func.return %p : tensor<1x16x16x16xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %p = npu_tile.kernel "conv..pool"(%x, %w) group {loops = ["h"], {{.*}}parts = 4 : i64, part_cycles = array<i64: {{.*}}>, plan = #npu_tile.strip<rows = 2, strips = 8, halo = [2, 1], sram = 24192>}
// ALWAYS-LABEL: func.func @main
// ALWAYS:       %p = npu_tile.kernel "conv..pool"(%x, %w) group {loops = ["h"], {{.*}}, line_buffer, plan = #npu_tile.strip<rows = 2, strips = 8, halo = [1, 1], sram = 29312, line_buffer, warm = 2>}

// -----

// A fire module: the concat's operands are computed into its channel ranges, which
// line buffers do not handle: no line_buffer even with line-buffers=always.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x4x16x16xf32>) -> tensor<1x16x8x8xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<8x4x1x1xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<8x4x3x3xf32>
    %a = npu_graph.conv2d %x, %w1 : (tensor<1x4x16x16xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x16x16xf32> loc("e1")
    %b = npu_graph.conv2d %x, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x16x16xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x16x16xf32> loc("e3")
    %c = npu_graph.concat %a, %b {axis = 1 : i64} : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x16x16x16xf32> loc("cat")
    %p = npu_graph.maxpool %c {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32> loc("pool")
    func.return %p : tensor<1x16x8x8xf32>
  }
}
// ALWAYS-LABEL: func.func @main
// ALWAYS:       %p = npu_tile.kernel "e1..pool"(%x, %w1, %w3) group {loops = ["h"], {{.*}}parts = {{[0-9]+}} : i64, {{.*}}plan = #npu_tile.strip<rows = 2, strips = 4, halo = [2, 1], sram = 9344>}
// ALWAYS-NOT:   line_buffer
