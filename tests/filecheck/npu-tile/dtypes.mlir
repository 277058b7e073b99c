// RUN: %opt %s --split-input-file -p npu-tile | filecheck %s

// Byte sizes follow the element type (docs/low-precision.md): a 512x64 @ 64x512 matmul
// with 32 KiB of SRAM. In f32 the search takes 64x64 output tiles over two 32-deep K
// steps; in f16 every tile is half the bytes, so its tiles are larger (64x96, the whole
// K in one step; its loops n outside m: each 96-column tile of w stays put over the 8
// steps along m and is read once, `run_length`, `ordered`) and the kernel moves a third
// of f32's DRAM bytes.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<512x64xf32>, %w: tensor<64x512xf32>) -> tensor<512x512xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<512x64xf32>, tensor<64x512xf32>) -> tensor<512x512xf32> loc("mm")
    func.return %y : tensor<512x512xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK: npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 64, 64, 32>, grid = array<i64: 8, 8, 2>, sram_bytes = 32768 : i64, {{.*}}dram_bytes = 3145728 : i64}

// -----

builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<512x64xf16>, %w: tensor<64x512xf16>) -> tensor<512x512xf16> {
    %y = npu_graph.matmul %x, %w : (tensor<512x64xf16>, tensor<64x512xf16>) -> tensor<512x512xf16> loc("mm")
    func.return %y : tensor<512x512xf16>
  }
}
// CHECK-LABEL: func.func @main
// CHECK: npu_tile.kernel "mm"(%x, %w) matmul {loops = ["n", "m", "k"], tile = array<i64: 96, 64, 64>, grid = array<i64: 6, 8, 1>, sram_bytes = 32768 : i64, {{.*}}dram_bytes = 1056768 : i64}

// -----

// A 256x1024 @ 1024x256 matmul in 64 KiB: with several K steps an f16 product sums in
// an f32 tile (`wide_accumulator`: the cube accumulates in f32; a 16-bit running sum
// would round at every step), which the SRAM count includes: 64x128 + 128x64 f16
// operand tiles, a 64x64 f32 accumulator and its 64x64 f16 result, 57344 bytes (f32:
// 64x128x32 tiles, also 57344 bytes, moving 6553600 DRAM bytes to f16's 4325376).
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 65536>} {
  func.func @main(%x: tensor<256x1024xf32>, %w: tensor<1024x256xf32>) -> tensor<256x256xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<256x1024xf32>, tensor<1024x256xf32>) -> tensor<256x256xf32> loc("mm")
    func.return %y : tensor<256x256xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK: npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 64, 128, 32>, grid = array<i64: 4, 2, 32>, sram_bytes = 57344 : i64, {{.*}}dram_bytes = 6553600 : i64}

// -----

builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 65536>} {
  func.func @main(%x: tensor<256x1024xf16>, %w: tensor<1024x256xf16>) -> tensor<256x256xf16> {
    %y = npu_graph.matmul %x, %w : (tensor<256x1024xf16>, tensor<1024x256xf16>) -> tensor<256x256xf16> loc("mm")
    func.return %y : tensor<256x256xf16>
  }
}
// CHECK-LABEL: func.func @main
// CHECK: npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 64, 64, 128>, grid = array<i64: 4, 4, 8>, sram_bytes = 57344 : i64, {{.*}}dram_bytes = 4325376 : i64}

// -----

// Mixed types in one kernel: a quantize's tile holds 4 x 256 f32 inputs, double
// buffered (2 x 4096 bytes), its scale and zero point (64 bytes each, aligned) and
// 4 x 256 i8 results (1024 bytes; a second 1024 for the deferred stores is left over);
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
// CHECK:      npu_tile.kernel "q"(%x, %s, %z) apply {loops = ["d0", "d1"], tile = array<i64: 4, 256>, grid = array<i64: 16, 1>, double_buffer = true, sram_bytes = 9344 : i64, {{.*}}dram_bytes = 81928 : i64}
// CHECK-SAME:   -> tensor<64x256xi8>
// CHECK:      npu_tile.kernel "t"(%q) apply {loops = ["d0", "d1"], tile = array<i64: 128, 64>, grid = array<i64: 2, 1>, sram_bytes = 16384 : i64, {{.*}}dram_bytes = 32768 : i64}
// CHECK:      npu_tile.kernel "d"(%t, %s, %z) apply {{.*}}dram_bytes = 81928 : i64}
// CHECK-SAME:   (tensor<256x64xi8>, tensor<f32>, tensor<f32>) -> tensor<256x64xf32>

// -----

// The same transpose in f32: a quarter of the elements per tile (double buffered:
// 16 x 64 tiles, 2 x 4096 bytes in and 4096 out, plus 4096 for the deferred stores).
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 16384>} {
  func.func @main(%x: tensor<64x256xf32>) -> tensor<256x64xf32> {
    %t = npu_graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<64x256xf32>) -> tensor<256x64xf32> loc("t")
    func.return %t : tensor<256x64xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:      npu_tile.kernel "t"(%x) apply {loops = ["d0", "d1"], tile = array<i64: 16, 64>, grid = array<i64: 16, 1>, double_buffer = true, sram_bytes = 12288 : i64, {{.*}}dram_bytes = 131072 : i64}

// -----

// A reduction that dequantizes its 8-bit input as it reads it (npu-fuse-qdq's, an
// EfficientNet squeeze) is priced with that pass over the input tile, as the simulator
// charges it (`ReduceOp.tile_cycles_of`): the input's 451,584 dequantized elements
// cost 7,056 vector cycles on one core, so the kernel splits its channels over 3 cores
// (priced without the pass it stayed whole on one, predicted at 3,936 cycles).
builtin.module {
  func.func @main(%x: tensor<1x144x56x56xi8>) -> tensor<1x144x1x1xf32> {
    %m = npu_graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true, input_scale = 2.500000e-01 : f32, input_zero_point = -3.000000e+00 : f32} : (tensor<1x144x56x56xi8>) -> tensor<1x144x1x1xf32> loc("squeeze")
    func.return %m : tensor<1x144x1x1xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK: npu_tile.kernel "squeeze"(%x) apply {loops = ["d0", "d1", "d2", "d3"], tile = array<i64: 1, 16, 1, 1>, grid = array<i64: 1, 9, 1, 1>, double_buffer = true, {{.*}}predicted_cycles = 5178 : i64, dram_bytes = 452160 : i64, parts = 3 : i64
