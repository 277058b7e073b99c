// RUN: %opt %s -p npu-fuse,npu-tile,npu-layer-group -o %t.mlir && filecheck %s < %t.mlir
// RUN: %opt %s -p npu-fuse,npu-tile,npu-layer-group,npu-tile-loops,npu-bufferize -o - | filecheck %s --check-prefix=BUF

// A [1, 1, H, W] operand of an elementwise op (an average pool's window counts, which
// npu-fuse-qdq divides a sum pool by) broadcasts over the channels: a side input of its
// own shape, its rows loaded per strip (rows outside the tensor read 1 for a divisor).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x8x32x32xi8>) -> tensor<1x8x16x16xi8> {
    %s = npu_graph.constant {value = dense<0.05> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<-3.0> : tensor<f32>} : tensor<f32>
    %n = npu_graph.constant {weight = "counts"} : tensor<1x1x16x16xf32>
    %d = npu_graph.dequantize %x, %s, %z : (tensor<1x8x32x32xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8x32x32xf32> loc("dq")
    %p = npu_graph.sumpool %d {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x32x32xf32>) -> tensor<1x8x16x16xf32> loc("pool")
    %a = npu_graph.div %p, %n : (tensor<1x8x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x8x16x16xf32> loc("count")
    %q = npu_graph.quantize %a, %s, %z : (tensor<1x8x16x16xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8x16x16xi8> loc("q")
    func.return %q : tensor<1x8x16x16xi8>
  }
  // Must not fire: an operand varying over H alone ([1, 1, H, 1]) is neither constant
  // over H and W nor a side input of the result's H and W: the divide stays out of the
  // strip group.
  func.func @rows_only(%x: tensor<1x8x32x32xi8>) -> tensor<1x8x16x16xi8> {
    %s = npu_graph.constant {value = dense<0.05> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<-3.0> : tensor<f32>} : tensor<f32>
    %n = npu_graph.constant {weight = "row_counts"} : tensor<1x1x16x1xf32>
    %d = npu_graph.dequantize %x, %s, %z : (tensor<1x8x32x32xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8x32x32xf32> loc("dq")
    %p = npu_graph.sumpool %d {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x32x32xf32>) -> tensor<1x8x16x16xf32> loc("pool")
    %a = npu_graph.div %p, %n : (tensor<1x8x16x16xf32>, tensor<1x1x16x1xf32>) -> tensor<1x8x16x16xf32> loc("count")
    %q = npu_graph.quantize %a, %s, %z : (tensor<1x8x16x16xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8x16x16xi8> loc("q")
    func.return %q : tensor<1x8x16x16xi8>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:      %q = npu_tile.kernel "dq..{{.*}}"(%x, %s, %z, %n) group {{{.*}}plan = #npu_tile.strip<rows = [[ROWS:[0-9]+]], strips =
// CHECK:        npu_graph.sumpool
// CHECK:        npu_graph.div %p, %{{.*}} : (tensor<1x8x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x8x16x16xf32>
// CHECK-LABEL: func.func @rows_only
// CHECK:      %p = npu_tile.kernel "dq#2..pool#2"(%x, %s, %z) group
// CHECK:      %q = npu_tile.kernel "count#2"(%p, %n, %s, %z) eltwise
// BUF:        %[[N:.*]] = npu_task.sram {{.*}} : memref<1x1x[[R:[0-9]+]]x16xf32, "sram">
// BUF:        scf.for
// BUF:        npu_dma.copy %{{.*}} -> %[[N]][{{.*}}] {sizes = array<i64: 1, 1, [[R]], 16>, pad_value = 1.000000e+00 : f32} : memref<1x1x16x16xf32, "dram"> -> memref<1x1x[[R]]x16xf32, "sram">
// BUF:        npu_compute.apply "npu_graph.sumpool"
// BUF-NEXT:   npu_compute.eltwise div %{{.*}}, %[[N]] -> %{{.*}} : memref<1x8x[[R]]x16xf32, "sram">, memref<1x1x[[R]]x16xf32, "sram">
// BUF-NEXT:   npu_compute.apply "npu_graph.quantize"
