// RUN: %opt %s -p npu-tile,npu-tile-loops,npu-bufferize | filecheck %s

// A tile load's reads outside the tensor (a partial tile's) are 0, but a divisor's are
// 1 (`default_pad`): 0 / 0 would put NaN in elements of a last tile that the quantize
// after the divide reads (and cannot store in its 8-bit buffer), though the store
// clips them (an average pool of an 8-bit tensor: npu-fuse-qdq's sum pool divided by
// its window counts).
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 4096>} {
  func.func @main(%x: tensor<1x8x14x14xf32>, %n: tensor<1x1x14x14xf32>) -> tensor<1x8x14x14xi8> {
    %s = npu_graph.constant {value = dense<0.05> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<-3.0> : tensor<f32>} : tensor<f32>
    %k = npu_graph.fused(%x, %n, %s, %z) {kernel = "count", rule = "eltwise-chain"} : (tensor<1x8x14x14xf32>, tensor<1x1x14x14xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8x14x14xi8> {
    ^bb0(%a: tensor<1x8x14x14xf32>, %b: tensor<1x1x14x14xf32>, %sa: tensor<f32>, %za: tensor<f32>):
      %d = npu_graph.div %a, %b : (tensor<1x8x14x14xf32>, tensor<1x1x14x14xf32>) -> tensor<1x8x14x14xf32>
      %q = npu_graph.quantize %d, %sa, %za : (tensor<1x8x14x14xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8x14x14xi8>
      npu_graph.yield %q : tensor<1x8x14x14xi8>
    }
    func.return %k : tensor<1x8x14x14xi8>
  }
}
// CHECK:      func.func @main(%[[X:.*]]: memref<1x8x14x14xf32, "dram">, %[[N:.*]]: memref<1x1x14x14xf32, "dram">
// CHECK:        npu_dma.copy %[[N]][{{.*}}] -> %[[NB:[0-9]+]][{{.*}}] {sizes = array<i64: 1, 1, 14, 14>, pad_value = 1.000000e+00 : f32}
// CHECK:        npu_dma.copy %[[X]][{{.*}}] -> %{{.*}} {sizes = array<i64: 1, 1, 14, 14>, pad_value = 0.000000e+00 : f32}
// CHECK:        npu_compute.eltwise div %{{.*}}, %[[NB]] ->
