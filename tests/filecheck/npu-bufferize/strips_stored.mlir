// RUN: %opt %s -p npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// A strip group storing an inner value with a halo (npu-tile-loops/strips_stored.mlir):
// %o holds rows [4s - 1, 4s + 5) of which strip s owns [4s, 4s + 4). Its buffer lives to
// the end of the strip (the 3x3 conv's output goes elsewhere); after the conv, the
// strip's rows of %o (from row 1 of its buffer) and of the output go to their DRAM
// buffers, clipped, issued together and then waited for.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 65536>} {
  func.func @main(%x: tensor<1x16x32x32xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<16x16x1x1xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<16x16x3x3xf32>
    %o, %y = npu_tile.kernel "c1..c2"(%x, %w1, %w2) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 8>, plan = #npu_tile.strip<rows = 4, strips = 8, halo = [1, 1], sram = 43072>} : (tensor<1x16x32x32xf32>, tensor<16x16x1x1xf32>, tensor<16x16x3x3xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) {
    ^bb0(%0: tensor<1x16x32x32xf32>, %1: tensor<16x16x1x1xf32>, %2: tensor<16x16x3x3xf32>):
      %o_1 = npu_graph.conv2d %0, %1 : (tensor<1x16x32x32xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x32x32xf32>
      %y_1 = npu_graph.conv2d %o_1, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x32x32xf32>
      npu_tile.yield %o_1, %y_1 : tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>
    }
    func.return %o, %y : tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>
  }
}
// CHECK:      func.func @main(%[[X:[0-9a-z_]+]]: memref<1x16x32x32xf32, "dram">, %[[OUT_O:[0-9a-z_]+]]: memref<1x16x32x32xf32, "dram">, %[[OUT_Y:[0-9a-z_]+]]: memref<1x16x32x32xf32, "dram">)
// CHECK:        %[[ONE:[0-9a-z_]+]] = arith.constant 1 : index
// CHECK:        scf.for %[[S:[0-9a-z_]+]] = 
// CHECK:          npu_compute.conv2d %{{.*}}, %{{.*}} -> %[[O:[0-9a-z_]+]] {{.*}} -> memref<1x16x6x32xf32, "sram">
// CHECK:          npu_compute.conv2d %[[O]], %{{.*}} -> %[[Y:[0-9a-z_]+]] {{.*}} -> memref<1x16x4x32xf32, "sram">
// CHECK-NEXT:     %[[RO:[0-9a-z_]+]] = arith.muli %[[S]], %{{.*}} : index
// CHECK-NEXT:     %[[TO:[0-9a-z_]+]] = npu_dma.copy %[[O]][%{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}] -> %[[OUT_O]][%{{.*}}, %{{.*}}, %[[RO]], %{{.*}}] {sizes = array<i64: 1, 16, 4, 32>, clip}
// CHECK:          %[[TY:[0-9a-z_]+]] = npu_dma.copy %[[Y]][{{.*}}] -> %[[OUT_Y]][{{.*}}] {sizes = array<i64: 1, 16, 4, 32>, clip}
// CHECK-NEXT:     npu_dma.wait %[[TO]]
// CHECK-NEXT:     npu_dma.wait %[[TY]]
// CHECK-NEXT:   }
