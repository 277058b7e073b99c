// RUN: %opt %s --split-input-file -p npu-tile-loops,npu-bufferize | filecheck %s

// bufferize.mlir's first kernel in f16: the buffers are f16 memrefs and the SRAM
// offsets advance 2 bytes an element (f32: 0, 256, 1280, 1536, 2560, 2624), but for
// the sum over its two K steps: an f32 accumulator (the cube's), cast at the last step
// into the f16 tile the bias add and relu run on and the store copies.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf16>) -> tensor<4x16xf16> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x32xf16>
    %b = npu_graph.constant {value = dense<0.5> : tensor<16xf16>} : tensor<16xf16>
    %y = npu_tile.kernel "fc"(%x, %w, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 1, 1, 2>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 100 : i64} : (tensor<4x32xf16>, tensor<16x32xf16>, tensor<16xf16>) -> tensor<4x16xf16> {
    ^bb0(%a: tensor<4x32xf16>, %bw: tensor<16x32xf16>, %c: tensor<16xf16>):
      %g = npu_graph.gemm %a, %bw, %c {trans_b = true} : (tensor<4x32xf16>, tensor<16x32xf16>, tensor<16xf16>) -> tensor<4x16xf16>
      %r = npu_graph.relu %g : (tensor<4x16xf16>) -> tensor<4x16xf16>
      npu_tile.yield %r : tensor<4x16xf16>
    }
    func.return %y : tensor<4x16xf16>
  }
}
// CHECK:      func.func @main(%[[X:.*]]: memref<4x32xf16, "dram">, %[[Y:.*]]: memref<4x16xf16, "dram">) {
// CHECK-NEXT:   %[[W:.*]] = npu_task.weight "w" : memref<16x32xf16, "dram">
// CHECK-NEXT:   %[[B:.*]] = npu_task.weight "inline1" {value = dense<5.000000e-01> : tensor<16xf16>} : memref<16xf16, "dram">
// CHECK-NEXT:   %[[BV:.*]] = npu_task.view %[[B]] : memref<16xf16, "dram"> to memref<1x16xf16, "dram">
// CHECK:        %[[A0:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x16xf16, "sram">
// CHECK-NEXT:   %[[B0:.*]] = npu_task.sram {offset = 128 : i64} : memref<16x16xf16, "sram">
// CHECK-NEXT:   %[[A1:.*]] = npu_task.sram {offset = 640 : i64} : memref<4x16xf16, "sram">
// CHECK-NEXT:   %[[B1:.*]] = npu_task.sram {offset = 768 : i64} : memref<16x16xf16, "sram">
// CHECK-NEXT:   %[[BIAS:.*]] = npu_task.sram {offset = 1280 : i64} : memref<1x16xf16, "sram">
// CHECK-NEXT:   %[[ACC:.*]] = npu_task.sram {offset = 1344 : i64} : memref<4x16xf32, "sram">
// CHECK-NEXT:   %[[OUT:.*]] = npu_task.sram {offset = 1600 : i64} : memref<4x16xf16, "sram">
// CHECK:        npu_dma.copy %[[X]][{{.*}}] -> %[[A0]][{{.*}}] {sizes = array<i64: 4, 16>, {{.*}}} : memref<4x32xf16, "dram"> -> memref<4x16xf16, "sram">
// CHECK:        npu_compute.matmul {{.*}} -> %[[ACC]] {trans_b} : memref<4x16xf16, "sram">, memref<16x16xf16, "sram"> -> memref<4x16xf32, "sram">
// CHECK:        npu_compute.matmul {{.*}} -> %[[ACC]] {trans_b, accumulate} : memref<4x16xf16, "sram">, memref<16x16xf16, "sram"> -> memref<4x16xf32, "sram">
// CHECK:        npu_compute.apply "npu_graph.cast" %[[ACC]] -> %[[OUT]] {{.*}} : memref<4x16xf32, "sram"> -> memref<4x16xf16, "sram">
// CHECK-NEXT:   npu_compute.eltwise add %[[OUT]], %[[BIAS]] -> %[[OUT]] : memref<4x16xf16, "sram">, memref<1x16xf16, "sram"> -> memref<4x16xf16, "sram">
// CHECK-NEXT:   npu_compute.eltwise relu %[[OUT]] -> %[[OUT]] : memref<4x16xf16, "sram"> -> memref<4x16xf16, "sram">
// CHECK:        npu_dma.copy %[[OUT]][{{.*}}] -> %[[Y]][{{.*}}] {{.*}} : memref<4x16xf16, "sram"> -> memref<4x16xf16, "dram">

// -----

// Integers: an i8 transpose's tiles are i8 buffers, 1 byte an element (the output
// slot starts 64 x 128 bytes in); a dequantize reads i8 tiles into an f32 result
// buffer, its scalar parameters f32 (64 bytes each, aligned).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%q: tensor<64x256xi8>, %s: tensor<f32>, %z: tensor<f32>) -> tensor<256x64xf32> {
    %t = npu_tile.kernel "t"(%q) apply {loops = ["d0", "d1"], tile = array<i64: 128, 64>, grid = array<i64: 2, 1>, sram_bytes = 16384 : i64, predicted_cycles = 100 : i64} : (tensor<64x256xi8>) -> tensor<256x64xi8> {
    ^bb0(%a: tensor<64x256xi8>):
      %r = npu_graph.transpose %a {perm = array<i64: 1, 0>} : (tensor<64x256xi8>) -> tensor<256x64xi8>
      npu_tile.yield %r : tensor<256x64xi8>
    }
    %d = npu_tile.kernel "d"(%t, %s, %z) apply {loops = ["d0", "d1"], tile = array<i64: 32, 64>, grid = array<i64: 8, 1>, sram_bytes = 10368 : i64, predicted_cycles = 100 : i64} : (tensor<256x64xi8>, tensor<f32>, tensor<f32>) -> tensor<256x64xf32> {
    ^bb0(%a: tensor<256x64xi8>, %sa: tensor<f32>, %za: tensor<f32>):
      %r = npu_graph.dequantize %a, %sa, %za : (tensor<256x64xi8>, tensor<f32>, tensor<f32>) -> tensor<256x64xf32>
      npu_tile.yield %r : tensor<256x64xf32>
    }
    func.return %d : tensor<256x64xf32>
  }
}
// CHECK:      func.func @main(%[[Q:.*]]: memref<64x256xi8, "dram">, %{{.*}}: memref<f32, "dram">, %{{.*}}: memref<f32, "dram">, %[[D:.*]]: memref<256x64xf32, "dram">) {
// CHECK-NEXT:   %[[T:.*]] = npu_task.alloc : memref<256x64xi8, "dram">
// CHECK:        npu_task.task "t"
// CHECK:        %[[IN:.*]] = npu_task.sram {offset = 0 : i64} : memref<64x128xi8, "sram">
// CHECK-NEXT:   %[[OUT:.*]] = npu_task.sram {offset = 8192 : i64} : memref<128x64xi8, "sram">
// CHECK:        npu_dma.copy %[[Q]][{{.*}}] -> %[[IN]][{{.*}}] {sizes = array<i64: 64, 128>, {{.*}}} : memref<64x256xi8, "dram"> -> memref<64x128xi8, "sram">
// CHECK:        npu_compute.apply "npu_graph.transpose" %[[IN]] -> %[[OUT]] {{.*}} : memref<64x128xi8, "sram"> -> memref<128x64xi8, "sram">
// CHECK:        npu_dma.copy %[[OUT]][{{.*}}] -> %[[T]][{{.*}}] {{.*}} : memref<128x64xi8, "sram"> -> memref<256x64xi8, "dram">
// CHECK:        npu_task.task "d"
// CHECK:        %[[QT:.*]] = npu_task.sram {offset = 0 : i64} : memref<32x64xi8, "sram">
// CHECK-NEXT:   %[[S:.*]] = npu_task.sram {offset = 2048 : i64} : memref<f32, "sram">
// CHECK-NEXT:   %[[Z:.*]] = npu_task.sram {offset = 2112 : i64} : memref<f32, "sram">
// CHECK-NEXT:   %[[R:.*]] = npu_task.sram {offset = 2176 : i64} : memref<32x64xf32, "sram">
// CHECK:        npu_compute.apply "npu_graph.dequantize" %[[QT]], %[[S]], %[[Z]] -> %[[R]] {{.*}} : memref<32x64xi8, "sram">, memref<f32, "sram">, memref<f32, "sram"> -> memref<32x64xf32, "sram">
// CHECK:        npu_dma.copy %[[R]][{{.*}}] -> %[[D]][{{.*}}] {{.*}} : memref<32x64xf32, "sram"> -> memref<256x64xf32, "dram">
