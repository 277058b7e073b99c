// RUN: %opt %s -p npu-fuse,npu-tile,npu-tile-loops,npu-bufferize | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// A KV-cache append with 64 new rows (a chunk of a prefill against the cache) on a
// chip fast enough at DRAM that the attention is compute-bound: the key blocks (128
// rows) are double buffered. The next block's past rows are prefetched into the
// other slot set (`src_clip`, the slots chosen by the step's parity); the new rows
// land in the current slot at the steps whose block reaches them (the second: rows
// 128..255 hold past rows 128..189 and new rows 0..65), and the tees copy from the
// current slots. The run (with the sanitizer on) matches numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 131072, dram_bw = 2048>} {
  func.func @main(%q: tensor<1x4x64x32xf32>, %pk: tensor<1x4x190x32xf32>, %nk: tensor<1x4x66x32xf32>, %pv: tensor<1x4x190x32xf32>, %nv: tensor<1x4x66x32xf32>) -> (tensor<1x4x64x32xf32>, tensor<1x4x256x32xf32>, tensor<1x4x256x32xf32>) attributes {npu.inputs = ["q", "past_key", "new_key", "past_value", "new_value"], npu.outputs = ["o", "present_key", "present_value"]} {
    %k = npu_graph.concat %pk, %nk {axis = 2 : i64} : (tensor<1x4x190x32xf32>, tensor<1x4x66x32xf32>) -> tensor<1x4x256x32xf32> loc("k")
    %v = npu_graph.concat %pv, %nv {axis = 2 : i64} : (tensor<1x4x190x32xf32>, tensor<1x4x66x32xf32>) -> tensor<1x4x256x32xf32> loc("v")
    %o = npu_graph.attention %q, %k, %v {scale = 0.176776692 : f32, key_rows} : (tensor<1x4x64x32xf32>, tensor<1x4x256x32xf32>, tensor<1x4x256x32xf32>) -> tensor<1x4x64x32xf32> loc("attn")
    func.return %o, %k, %v : tensor<1x4x64x32xf32>, tensor<1x4x256x32xf32>, tensor<1x4x256x32xf32>
  }
}
// CHECK:      scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (!npu_dma.token, !npu_dma.token) {
// CHECK:        %[[K:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : memref<1x1x128x32xf32, "sram">
// CHECK-NEXT:   %[[V:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : memref<1x1x128x32xf32, "sram">
// CHECK-NEXT:   %[[KN:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : memref<1x1x128x32xf32, "sram">
// CHECK-NEXT:   %[[VN:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : memref<1x1x128x32xf32, "sram">
// CHECK:        npu_dma.copy %1[{{.*}}] -> %[[KN]][{{.*}}] {sizes = array<i64: 1, 1, 128, 32>, src_clip}
// CHECK:        npu_dma.copy %3[{{.*}}] -> %[[VN]][{{.*}}] {sizes = array<i64: 1, 1, 128, 32>, src_clip}
// CHECK:        scf.if
// CHECK:          npu_dma.copy %2[{{.*}}] -> %[[K]][{{.*}}] {sizes = array<i64: 1, 1, 128, 32>, src_clip}
// CHECK:        npu_dma.copy %[[K]][{{.*}}] -> %6[{{.*}}] {sizes = array<i64: 1, 1, 128, 32>, clip}
// CHECK:        scf.if
// CHECK:          npu_dma.copy %4[{{.*}}] -> %[[V]][{{.*}}] {sizes = array<i64: 1, 1, 128, 32>, src_clip}
// CHECK:        npu_dma.copy %[[V]][{{.*}}] -> %7[{{.*}}] {sizes = array<i64: 1, 1, 128, 32>, clip}
// CHECK:        npu_compute.apply "npu_graph.attention" %{{.*}}, %[[K]], %[[V]]

// SIM: check:       ok vs numpy float64 reference
