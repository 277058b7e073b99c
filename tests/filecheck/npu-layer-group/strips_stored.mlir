// RUN: %opt %s --split-input-file -p npu-tile,npu-layer-group | filecheck %s
// RUN: %opt %s --split-input-file -p npu-tile,npu-layer-group --remarks -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK

// A ResNet-style pair: %o (conv 3x3 + relu) is read by the next conv and again by the
// residual add two kernels later. Whole tensors overflow the 32 KiB, so a strip group
// of c1..r2 must store %o as well as its last result: one kernel with two results (the
// yield names both), and the residual add reads %o from it.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<16x16x3x3xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<8x16x1x1xf32>
    %w3 = npu_graph.constant {weight = "w3"} : tensor<16x8x3x3xf32>
    %a = npu_graph.conv2d %x, %w1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> loc("c1")
    %o = npu_graph.relu %a : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("r1")
    %b = npu_graph.conv2d %o, %w2 : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32> loc("c2")
    %c = npu_graph.relu %b : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32> loc("r2")
    %d = npu_graph.conv2d %c, %w3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32> loc("c3")
    %e = npu_graph.add %d, %o : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("res")
    func.return %e : tensor<1x16x32x32xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %o, %c = npu_tile.kernel "c1..r2"(%x, %w1, %w2) group {loops = ["h"], tile = array<i64: 3>, grid = array<i64: 11>, {{.*}}plan = #npu_tile.strip<rows = 3, strips = 11, halo = [1, 1], sram = 29184>} : {{.*}} -> (tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>)
// CHECK:         %[[O:.*]] = npu_graph.relu %a
// CHECK:         %[[C:.*]] = npu_graph.relu %b
// CHECK-NEXT:    npu_tile.yield %[[O]], %[[C]] : tensor<1x16x32x32xf32>, tensor<1x8x32x32xf32>
// CHECK:       %e = npu_tile.kernel "c3..res"(%c, %w3, %o) group {loops = ["h"]
// REMARK:      remark: npu-layer-group: applied: [c3, res] strip group of 2 kernels
// REMARK:      remark: npu-layer-group: applied: [c1, r1, c2, r2] strip group of 4 kernels

// -----

// Must not fire: %o (5 rows) is returned too, and the valid 3x3 conv reading it has 3
// rows, so strips of its rows (2 or 1) step 2 or 1 rows of %o and cover 4 or 3 of its
// 5: no strip group can store every row of %o, and the whole tensors overflow SRAM.
// The kernels stay apart; the remark says what the strips would have had to store.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 40960>} {
  func.func @main(%x: tensor<1x4x5x256xf32>) -> (tensor<1x4x5x256xf32>, tensor<1x4x3x254xf32>) {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<4x4x3x3xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<4x4x3x3xf32>
    %o = npu_graph.conv2d %x, %w1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x5x256xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x5x256xf32> loc("c1")
    %y = npu_graph.conv2d %o, %w2 : (tensor<1x4x5x256xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x3x254xf32> loc("c2")
    func.return %o, %y : tensor<1x4x5x256xf32>, tensor<1x4x3x254xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %o = npu_tile.kernel "c1"(%x, %w1) conv2d
// CHECK:       %y = npu_tile.kernel "c2"(%o, %w2) conv2d
// REMARK:      remark: npu-layer-group: missed: [c1, c2] 'c1' and the next kernel not grouped: their tensors do not fit one core's SRAM together: whole they need 42112 bytes, 1152 more than its 40960, and no strip height fits (storing the result of 'c1' too)
// REMARK-NOT:  npu-layer-group: applied: [c1

// -----

// Two ResNet-style blocks: %o2 (the second block's output) is read by the next 1x1 conv
// in the strip group d..f and by the residual add after it, and its own residual %o1 is
// read for the last time by the add computing it, at exactly the rows each strip
// stores: the group stores %o2 over %o1 (`stored_in_place`, operand 2 of the group), as
// the kernel computing %o2 alone would have.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    %ws = npu_graph.constant {weight = "ws"} : tensor<16x16x3x3xf32>
    %wb = npu_graph.constant {weight = "wb"} : tensor<8x16x1x1xf32>
    %wd = npu_graph.constant {weight = "wd"} : tensor<16x8x3x3xf32>
    %wf = npu_graph.constant {weight = "wf"} : tensor<8x16x1x1xf32>
    %wh = npu_graph.constant {weight = "wh"} : tensor<16x8x3x3xf32>
    %s0 = npu_graph.conv2d %x, %ws {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> loc("stem")
    %o1 = npu_graph.relu %s0 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("stem_relu")
    %b0 = npu_graph.conv2d %o1, %wb : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32> loc("b")
    %b1 = npu_graph.relu %b0 : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32> loc("b_relu")
    %d0 = npu_graph.conv2d %b1, %wd {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32> loc("d")
    %d1 = npu_graph.add %d0, %o1 : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("res1")
    %o2 = npu_graph.relu %d1 : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("res1_relu")
    %f0 = npu_graph.conv2d %o2, %wf : (tensor<1x16x32x32xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x32x32xf32> loc("f")
    %f1 = npu_graph.relu %f0 : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32> loc("f_relu")
    %h0 = npu_graph.conv2d %f1, %wh {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32> loc("h")
    %e = npu_graph.add %h0, %o2 : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("res2")
    func.return %e : tensor<1x16x32x32xf32>
  }
}
// CHECK-LABEL: func.func @main
// REMARK:      remark: npu-layer-group: applied: [d, res1, res1_relu, f (+1)] strip group of 5 kernels
// CHECK:       %o2, %f1 = npu_tile.kernel "d..f_relu"(%b1, %wd, %o1, %wf) group {loops = ["h"]{{.*}}plan = #npu_tile.strip<{{.*}}stored_in_place = [2]>}
