// RUN: %opt %s -p npu-fuse,npu-tile,npu-layer-group -o %t.mlir && filecheck %s < %t.mlir
// RUN: %opt %s -p npu-fuse,npu-tile,npu-layer-group,npu-tile-loops,npu-bufferize -o - | filecheck %s --check-prefix=BUF

// A lookup table (npu-fuse-qdq's: a rescale, a BatchNorm-ReLU) joins a strip group like a
// quantize: its table is loaded once per task, then looked up on each strip's rows.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x8x32x32xi8>) -> tensor<1x16x16x16xi8> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xi8>
    %m = npu_graph.constant {value = dense<0.01> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %lut = npu_graph.constant {weight = "lut"} : tensor<256xi8>
    %c = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xi8>, tensor<16x8x3x3xi8>) -> tensor<1x16x32x32xi32> loc("conv")
    %r = npu_graph.requantize %c, %m, %z : (tensor<1x16x32x32xi32>, tensor<f32>, tensor<f32>) -> tensor<1x16x32x32xi8> loc("rq")
    %t = npu_graph.table %r, %lut : (tensor<1x16x32x32xi8>, tensor<256xi8>) -> tensor<1x16x32x32xi8> loc("rescale")
    %p = npu_graph.maxpool %t {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xi8>) -> tensor<1x16x16x16xi8> loc("pool")
    func.return %p : tensor<1x16x16x16xi8>
  }
}
// CHECK:      %p = npu_tile.kernel "conv..pool"(%x, %w, %m, %z, %lut) group {{{.*}}plan = #npu_tile.strip<rows = 2, strips = 8
// CHECK:        npu_graph.table
// CHECK:        npu_graph.maxpool
// BUF:        %[[LUT:.*]] = npu_task.sram {{.*}} : memref<256xi8, "sram">
// BUF-NEXT:   npu_dma.copy %{{.*}} -> %[[LUT]]{{.*}} : memref<256xi8, "dram"> -> memref<256xi8, "sram">
// BUF:        scf.for
// BUF:        npu_compute.apply "npu_graph.table" %{{.*}}, %[[LUT]] ->
