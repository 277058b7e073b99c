// RUN: npu-opt %s --split-input-file --verify-diagnostics -p npu-bufferize 2>&1 | filecheck %s
// RUN: not npu-opt %s --split-input-file -p npu-bufferize 2>&1 | filecheck %s --check-prefix=EXIT
// EXIT: error: npu-bufferize: kernel 'act': tile buffers need
// Errors of the tile-loop patterns (lowering/buffer/tile_loop_patterns.py), each a
// diagnostic naming the kernel, never a traceback.
// CHECK-NOT: Traceback

// The slots of one step (two per load with double buffering, plus the accumulator)
// do not fit the arch's SRAM: 3 x 2 KiB > 4 KiB.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 4096>} {
  func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %z = npu_tile.kernel "act"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 8, 64>, grid = array<i64: 1, 1>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>):
      %0 = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 8, 64>, grid = array<i64: 1, 1>, reductions = 0 : i64, double_buffer} -> tensor<8x64xf32> {
      ^bb0(%d0: index, %d1: index):
        %1 = npu_tile.load %a(%d0, %d1)[8 * %d0, 64 * %d1] sizes [8, 64] : tensor<8x64xf32>
        %2 = npu_graph.relu %1 : (tensor<8x64xf32>) -> tensor<8x64xf32>
        %3 = npu_tile.reduce %2 : tensor<8x64xf32> -> tensor<8x64xf32>
        npu_tile.store %3(%d0, %d1)[8 * %d0, 64 * %d1] sizes [8, 64] : tensor<8x64xf32>
      }
      npu_tile.yield %0 : tensor<8x64xf32>
    }
    func.return %z : tensor<8x64xf32>
  }
}
// CHECK: error: npu-bufferize: kernel 'act': tile buffers need 6144 bytes of SRAM, more than sram_bytes=4096

// -----

// The steps loop linearises one reduction loop (innermost); two are not supported.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %z = npu_tile.kernel "two"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 64>, grid = array<i64: 2, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>):
      %0 = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 64>, grid = array<i64: 2, 1>, reductions = 2 : i64} -> tensor<8x64xf32> {
      ^bb0(%d0: index, %d1: index):
        %1 = npu_tile.load %a(%d0, %d1)[4 * %d0, 64 * %d1] sizes [4, 64] : tensor<8x64xf32>
        %2 = npu_graph.relu %1 : (tensor<4x64xf32>) -> tensor<4x64xf32>
        %3 = npu_tile.reduce %2 : tensor<4x64xf32> -> tensor<4x64xf32>
        npu_tile.store %3(%d0, %d1)[4 * %d0, 64 * %d1] sizes [4, 64] : tensor<4x64xf32>
      }
      npu_tile.yield %0 : tensor<8x64xf32>
    }
    func.return %z : tensor<8x64xf32>
  }
}
// CHECK: error: npu-bufferize: kernel 'two': a tile loop with more than one reduction loop is not supported

// -----

// A sum starting from an init tile that moves with the reduction loop (it would be
// reloaded into the accumulator every step).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>) -> tensor<8x64xf32> {
    %z = npu_tile.kernel "moving"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 8, 64, 16>, grid = array<i64: 1, 1, 4>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>, %b: tensor<64x64xf32>):
      %0 = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 8, 64, 16>, grid = array<i64: 1, 1, 4>, reductions = 1 : i64} -> tensor<8x64xf32> {
      ^bb0(%m: index, %n: index, %k: index):
        %1 = npu_tile.load %a(%m, %n, %k)[8 * %m, 16 * %k] sizes [8, 16] : tensor<8x64xf32>
        %2 = npu_tile.load %b(%m, %n, %k)[16 * %k, 64 * %n] sizes [16, 64] : tensor<64x64xf32>
        %3 = npu_tile.load %b(%m, %n, %k)[8 * %k, 0] sizes [8, 64] : tensor<64x64xf32>
        %4 = npu_graph.matmul %1, %2 : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
        %5 = npu_tile.reduce %4 init %3 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
        npu_tile.store %5(%m, %n, %k)[8 * %m, 64 * %n] sizes [8, 64] : tensor<8x64xf32>
      }
      npu_tile.yield %0 : tensor<8x64xf32>
    }
    func.return %z : tensor<8x64xf32>
  }
}
// CHECK: error: npu-bufferize: kernel 'moving': a sum starting from an init tile needs reduction steps it stays put over
