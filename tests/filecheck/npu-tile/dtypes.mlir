// RUN: %opt %s --split-input-file -p npu-tile | filecheck %s

// Byte sizes follow the element type (docs/low-precision.md): the same 256^3 matmul
// with 64 KiB of SRAM. In f32 the search keeps 64-row output tiles, single buffered
// (57344 bytes); in f16 every tile is half the bytes, so it affords 128-row output tiles
// double buffered (2 x (128x32 + 32x128) x 2 + 128x128 x 2 = 65536 bytes), and the
// kernel moves fewer DRAM bytes (larger tiles reread less, at 2 bytes an element).
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 65536>} {
  func.func @main(%x: tensor<256x256xf32>, %w: tensor<256x256xf32>) -> tensor<256x256xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32> loc("mm")
    func.return %y : tensor<256x256xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK: npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 64, 128, 32>, grid = array<i64: 4, 2, 8>, sram_bytes = 57344 : i64, {{.*}}dram_bytes = 1835008 : i64}

// -----

builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 65536>} {
  func.func @main(%x: tensor<256x256xf16>, %w: tensor<256x256xf16>) -> tensor<256x256xf16> {
    %y = npu_graph.matmul %x, %w : (tensor<256x256xf16>, tensor<256x256xf16>) -> tensor<256x256xf16> loc("mm")
    func.return %y : tensor<256x256xf16>
  }
}
// CHECK-LABEL: func.func @main
// CHECK: npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 128, 128, 32>, grid = array<i64: 2, 2, 8>, double_buffer = true, sram_bytes = 65536 : i64, {{.*}}dram_bytes = 655360 : i64}

// -----

// Mixed types in one kernel: a quantize's tile holds 8 x 256 f32 inputs (8192 bytes),
// its scale and zero point (64 bytes each, aligned) and 8 x 256 i8 results (2048 bytes);
// its DRAM bytes are 64x256 x 4 in, 64x256 x 1 out and the two scalars. An i8 transpose
// takes tiles 4x the elements of an f32 one in the same SRAM; the dequantize reads i8
// and writes f32.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 16384>} {
  func.func @main(%x: tensor<64x256xf32>) -> tensor<256x64xf32> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %q = npu_graph.quantize %x, %s, %z : (tensor<64x256xf32>, tensor<f32>, tensor<f32>) -> tensor<64x256xi8> loc("q")
    %t = npu_graph.transpose %q {perm = array<i64: 1, 0>} : (tensor<64x256xi8>) -> tensor<256x64xi8> loc("t")
    %d = npu_graph.dequantize %t, %s, %z : (tensor<256x64xi8>, tensor<f32>, tensor<f32>) -> tensor<256x64xf32> loc("d")
    func.return %d : tensor<256x64xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:      npu_tile.kernel "q"(%x, %s, %z) apply {loops = ["d0", "d1"], tile = array<i64: 8, 256>, grid = array<i64: 8, 1>, sram_bytes = 10368 : i64, {{.*}}dram_bytes = 81928 : i64}
// CHECK-SAME:   -> tensor<64x256xi8>
// CHECK:      npu_tile.kernel "t"(%q) apply {loops = ["d0", "d1"], tile = array<i64: 128, 64>, grid = array<i64: 2, 1>, sram_bytes = 16384 : i64, {{.*}}dram_bytes = 32768 : i64}
// CHECK:      npu_tile.kernel "d"(%t, %s, %z) apply {{.*}}dram_bytes = 81928 : i64}
// CHECK-SAME:   (tensor<256x64xi8>, tensor<f32>, tensor<f32>) -> tensor<256x64xf32>

// -----

// The same transpose in f32: a quarter of the elements per tile.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 16384>} {
  func.func @main(%x: tensor<64x256xf32>) -> tensor<256x64xf32> {
    %t = npu_graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<64x256xf32>) -> tensor<256x64xf32> loc("t")
    func.return %t : tensor<256x64xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:      npu_tile.kernel "t"(%x) apply {loops = ["d0", "d1"], tile = array<i64: 32, 64>, grid = array<i64: 8, 1>, sram_bytes = 16384 : i64, {{.*}}dram_bytes = 131072 : i64}
