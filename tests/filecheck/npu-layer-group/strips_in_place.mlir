// RUN: %opt %s -p npu-tile,npu-layer-group | filecheck %s
// RUN: %opt %s -p npu-tile,npu-layer-group,npu-tile-loops,npu-bufferize | filecheck %s --check-prefix=TASK

// A residual block whose residual %r (a sigmoid kernel's result) is added at exactly
// the rows each strip stores and read by nothing else in the group: the strip group's
// plan records that its output overwrites operand 2 in place (`in_place = 2`), and
// npu-bufferize marks the output alloc reuse(%r) without analysing anything.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x16x32x32xf32>, %q: tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x16x3x3xf32>
    %r = npu_graph.sigmoid %q : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("r")
    %c = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32> loc("conv")
    %t = npu_graph.add %c, %r : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("res")
    %e = npu_graph.neg %t : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("e")
    %f = npu_graph.transpose %e {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("f")
    func.return %f : tensor<1x16x32x32xf32>
  }
}
// CHECK:      %r = npu_tile.kernel "r"(%q) eltwise
// CHECK:      %e = npu_tile.kernel "conv..e"(%x, %w, %r) group {loops = ["h"], tile = array<i64: 3>, grid = array<i64: 11>, {{.*}}, plan = #npu_tile.strip<rows = 3, strips = 11, halo = [1, 1], sram = 31744, in_place = 2>}
// TASK:       %[[R:.*]] = npu_task.alloc : memref<1x16x32x32xf32, "dram">
// TASK:       npu_task.alloc reuse(%[[R]] : memref<1x16x32x32xf32, "dram">) : memref<1x16x32x32xf32, "dram">
