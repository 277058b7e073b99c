// RUN: %opt %s --split-input-file -p npu-tile | filecheck %s

// A gemm + relu kernel on one core: the whole problem is one tile (nothing to
// overlap, no padding waste); tile sizes, trip counts, SRAM and predicted cycles are recorded.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>) -> tensor<4x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x32xf32>
    %y = npu_graph.fused(%x, %w) {kernel = "fc", rule = "matmul-epilogue"} : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x32xf32>, %b: tensor<16x32xf32>):
      %g = npu_graph.gemm %a, %b {trans_b = true} : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32>
      %r = npu_graph.relu %g : (tensor<4x16xf32>) -> tensor<4x16xf32>
      npu_graph.yield %r : tensor<4x16xf32>
    }
    func.return %y : tensor<4x16xf32>
  }
}
// CHECK:      npu_graph.constant {weight = "w"}
// CHECK:      npu_tile.kernel "fc"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 32>, grid = array<i64: 1, 1, 1>, double_buffer = true, sram_bytes = {{[0-9]+}} : i64, predicted_cycles = {{[0-9]+}} : i64, dram_bytes = 2816 : i64}
// CHECK:        npu_graph.gemm
// CHECK-NEXT:   npu_graph.relu
// CHECK-NEXT:   npu_tile.yield

// -----

// Compute-bound (dram_bw = 4096): with 4 cores the cost model picks 2x2
// parallel tiles and asks for 4 parts, recording its span on 1, 2, 3 and 4 cores
// (`part_cycles`: 3 parts take as long as 2 do, the largest holds 2 of the 4 tiles,
// and the split's two syncs are left out); on one core it keeps M and N whole (one
// part: `parts` has its default, 1, and neither is printed).
builtin.module attributes {npu.arch = #npu.arch<dram_bw = 4096>} {
  func.func @main(%x: tensor<256x256xf32>, %w: tensor<256x256xf32>) -> tensor<256x256xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32> loc("mm")
    func.return %y : tensor<256x256xf32>
  }
}
// CHECK: npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 128, 128, 64>, grid = array<i64: 2, 2, 4>
// CHECK-SAME: predicted_cycles = 1576 : i64, dram_bytes = 1310720 : i64, parts = 4 : i64, part_cycles = array<i64: 5176, 2744, 2795, 1576>}

// -----

builtin.module attributes {npu.arch = #npu.arch<dram_bw = 4096, cores = 1>} {
  func.func @main(%x: tensor<256x256xf32>, %w: tensor<256x256xf32>) -> tensor<256x256xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32> loc("mm")
    func.return %y : tensor<256x256xf32>
  }
}
// CHECK: npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 256, 256, 16>, grid = array<i64: 1, 1, 16>
// CHECK-SAME: dram_bytes = {{[0-9]+}} : i64} : (

// -----

// A bandwidth-bound matmul is not split: the parts would share dram_bw.
builtin.module {
  func.func @main(%x: tensor<64x256xf32>, %w: tensor<256x256xf32>) -> tensor<64x256xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("mm")
    func.return %y : tensor<64x256xf32>
  }
}
// CHECK: npu_tile.kernel "mm"(%x, %w) matmul
// CHECK-SAME: dram_bytes = {{[0-9]+}} : i64} : (

// -----

// With only 8 KiB of SRAM the 128x256 @ 256x128 matmul must be cut into
// several tiles, and the chosen tiles must fit (sram_bytes <= 8192).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 8192, cores = 1>} {
  func.func @main(%a: tensor<128x256xf32>, %b: tensor<256x128xf32>) -> tensor<128x128xf32> {
    %y = npu_graph.matmul %a, %b : (tensor<128x256xf32>, tensor<256x128xf32>) -> tensor<128x128xf32> loc("mm")
    func.return %y : tensor<128x128xf32>
  }
}
// CHECK: npu_tile.kernel "mm"(%a, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 32, 32, 16>, grid = array<i64: 4, 4, 16>, sram_bytes = 8192 : i64

// -----

// double-buffer=false halves the input tile buffers and is recorded (false is the
// default of `double_buffer`, which is then not printed).
// RUN: %opt %s --split-input-file -p 'npu-tile{double-buffer=false}' | filecheck %s --check-prefix=SINGLE
builtin.module {
  func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
    %p = npu_graph.maxpool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> loc("pool")
    func.return %p : tensor<1x3x4x4xf32>
  }
}
// CHECK:  npu_tile.kernel "pool"(%x) pool {loops = ["n", "c", "oh", "ow"]
// CHECK-SAME: double_buffer = true
// SINGLE: npu_tile.kernel "pool"(%x) pool {loops = ["n", "c", "oh", "ow"]
// SINGLE-SAME: grid = array<{{[^>]*}}>, sram_bytes = 

// -----

// A reshape becomes a view kernel: no loops, no SRAM, no cycles.
builtin.module {
  func.func @main(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
    %r = npu_graph.reshape %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32> loc("flat")
    func.return %r : tensor<2x12xf32>
  }
}
// CHECK: npu_tile.kernel "flat"(%x) view {loops = [], tile = array<i64>, grid = array<i64>}
