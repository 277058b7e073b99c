// RUN: %opt %s -p npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// The strip group of npu-layer-group/strips.mlir with double_buffer (prefetch): the
// mask and input rows of strip lo (smallest first) go to slot 0 before the loop; each strip issues the
// next strip's loads into the other slot (a select on the strip's parity) before it
// waits for its own and computes on the slot the other select picks; the last strip is peeled.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x32x32xf32>) -> tensor<1x16x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xf32>
    %b = npu_graph.constant {weight = "b"} : tensor<16xf32>
    %p = npu_tile.kernel "conv..pool"(%x, %w, %b) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 8>, double_buffer = true, sram_bytes = 31552 : i64, predicted_cycles = 2144 : i64, dram_bytes = 78720 : i64, parts = 4 : i64, plan = #npu_tile.strip<rows = 2, strips = 8, halo = [2, 1], sram = 31552, prefetch>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32> {
    ^bb0(%0: tensor<1x8x32x32xf32>, %1: tensor<16x8x3x3xf32>, %2: tensor<16xf32>):
      %c = npu_graph.conv2d %0, %1, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x32x32xf32> loc("conv")
      %r = npu_graph.relu %c : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("relu")
      %p_1 = npu_graph.maxpool %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32> loc("pool")
      npu_tile.yield %p_1 : tensor<1x16x16x16xf32>
    } loc(fused["conv", "relu", "pool"])
    func.return %p : tensor<1x16x16x16xf32>
  }
}

// CHECK:      npu_task.task "conv..pool"
// CHECK:        %[[X0:.*]] = npu_task.sram {{.*}} : memref<1x8x7x32xf32, "sram">
// CHECK-NEXT:   %[[X1:.*]] = npu_task.sram {{.*}} : memref<1x8x7x32xf32, "sram">
// CHECK:        %[[T0:.*]] = npu_dma.copy %{{.*}} -> %[[X0]]{{.*}} {sizes = array<i64: 1, 8, 7, 32>, pad_value = 0.000000e+00 : f32}
// CHECK:        scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{[0-9]+}} = %{{[0-9]+}}, %{{[0-9]+}} = %{{[0-9]+}}, %[[A:[0-9]+]] = %[[T0]]) -> (!npu_dma.token, !npu_dma.token, !npu_dma.token) {
// CHECK:          %[[ODD:.*]] = arith.cmpi eq,
// CHECK-NEXT:     %[[CUR:.*]] = arith.select %[[ODD]], %[[X1]], %[[X0]]
// CHECK:          %[[NXT:.*]] = arith.select %[[ODD]], %[[X0]], %[[X1]]
// CHECK:          npu_dma.copy %{{.*}} -> %[[NXT]]
// CHECK:          npu_dma.wait %[[A]]
// CHECK:          npu_compute.conv2d %[[CUR]]
// CHECK:          scf.yield
// CHECK:        npu_dma.wait
// CHECK:        npu_compute.conv2d
