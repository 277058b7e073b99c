// RUN: %opt %s --split-input-file -p npu-bufferize | filecheck %s
// The patterns of lowering/buffer/tile_loop_patterns.py on kernels already in their
// npu_tile.loop form: TileLoopToSteps, LoadToCopy, StageOnBuffers, StoreToCopy,
// PrefetchLoads (errors: tile_loop_errors.mlir; a layer group has no loop and none
// of them fires: group.mlir).

// No reduction, no double buffering: one slot per load and an accumulator; each step
// copies both tiles, then waits for both (LoadToCopy waits after the step's last
// load); the anchor writes the accumulator, the relu runs in place on it
// (StageOnBuffers); the store copies it out, clipped (StoreToCopy).
// CHECK-LABEL: npu_task.task "add"
// CHECK:         %[[SX:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x64xf32, "sram">
// CHECK-NEXT:    %[[SY:.*]] = npu_task.sram {offset = 1024 : i64} : memref<4x64xf32, "sram">
// CHECK-NEXT:    %[[ACC:.*]] = npu_task.sram {offset = 2048 : i64} : memref<4x64xf32, "sram">
// CHECK-NEXT:    scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[ROW:.*]] = arith.muli %[[T]], %{{.*}} : index
// CHECK-NEXT:      %[[CX:.*]] = npu_dma.copy %{{.*}}[%[[ROW]], %{{.*}}] -> %[[SX]]
// CHECK-NEXT:      arith.muli
// CHECK-NEXT:      %[[CY:.*]] = npu_dma.copy %{{.*}} -> %[[SY]]
// CHECK-NEXT:      npu_dma.wait %[[CX]]
// CHECK-NEXT:      npu_dma.wait %[[CY]]
// CHECK-NEXT:      npu_compute.eltwise add %[[SX]], %[[SY]] -> %[[ACC]]
// CHECK-NEXT:      npu_compute.eltwise relu %[[ACC]] -> %[[ACC]]
// CHECK-NEXT:      arith.muli
// CHECK-NEXT:      %[[ST:.*]] = npu_dma.copy %[[ACC]][{{.*}}] -> %{{.*}} {sizes = array<i64: 4, 64>, clip}
// CHECK-NEXT:      npu_dma.wait %[[ST]]
// CHECK-NEXT:    }
// CHECK-NOT:     npu_tile.
// CHECK-NOT:     npu_compute.to_tensor
// CHECK-NOT:     npu_compute.materialize
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<8x64xf32>, %y: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %z = npu_tile.kernel "add"(%x, %y) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 64>, grid = array<i64: 2, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>, %b: tensor<8x64xf32>):
      %0 = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 64>, grid = array<i64: 2, 1>, reductions = 0 : i64} -> tensor<8x64xf32> {
      ^bb0(%d0: index, %d1: index):
        %1 = npu_tile.load %a(%d0, %d1)[4 * %d0, 64 * %d1] sizes [4, 64] : tensor<8x64xf32>
        %2 = npu_tile.load %b(%d0, %d1)[4 * %d0, 64 * %d1] sizes [4, 64] : tensor<8x64xf32>
        %3 = npu_graph.add %1, %2 : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
        %4 = npu_tile.reduce %3 : tensor<4x64xf32> -> tensor<4x64xf32>
        %5 = npu_graph.relu %4 : (tensor<4x64xf32>) -> tensor<4x64xf32>
        npu_tile.store %5(%d0, %d1)[4 * %d0, 64 * %d1] sizes [4, 64] : tensor<4x64xf32>
      }
      npu_tile.yield %0 : tensor<8x64xf32>
    }
    func.return %z : tensor<8x64xf32>
  }
}

// -----

// Two reduction steps per output tile: the anchor overwrites the accumulator at the
// first (scf.if) and accumulates after; the bias is loaded once, synchronously, at
// the last step, where the epilogue and the store run.
// CHECK-LABEL: npu_task.task "fc"
// CHECK:         %[[A:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x16xf32, "sram">
// CHECK-NEXT:    %[[B:.*]] = npu_task.sram {offset = 256 : i64} : memref<16x16xf32, "sram">
// CHECK-NEXT:    %[[BIAS:.*]] = npu_task.sram {offset = 1280 : i64} : memref<1x16xf32, "sram">
// CHECK-NEXT:    %[[ACC:.*]] = npu_task.sram {offset = 1344 : i64} : memref<4x16xf32, "sram">
// CHECK:         scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[K:.*]] = arith.remui %[[T]], %{{.*}} : index
// CHECK:           npu_dma.wait
// CHECK-NEXT:      npu_dma.wait
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi eq, %[[K]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        npu_compute.matmul %[[A]], %[[B]] -> %[[ACC]] {trans_b}
// CHECK-NEXT:      } else {
// CHECK-NEXT:        npu_compute.matmul %[[A]], %[[B]] -> %[[ACC]] {trans_b, accumulate}
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[LAST:.*]] = arith.cmpi eq, %[[K]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[LAST]] {
// CHECK-NEXT:        %[[CB:.*]] = npu_dma.copy %{{.*}} -> %[[BIAS]]
// CHECK-NEXT:        npu_dma.wait %[[CB]]
// CHECK-NEXT:        npu_compute.eltwise add %[[ACC]], %[[BIAS]] -> %[[ACC]]
// CHECK-NEXT:        %[[ST:.*]] = npu_dma.copy %[[ACC]]
// CHECK-NEXT:        npu_dma.wait %[[ST]]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
    %y = npu_tile.kernel "fc"(%x, %w, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 1, 1, 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 100 : i64} : (tensor<4x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x32xf32>, %bw: tensor<16x32xf32>, %c: tensor<16xf32>):
      %0 = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 1, 1, 2>, reductions = 1 : i64} -> tensor<4x16xf32> {
      ^bb0(%m: index, %n: index, %k: index):
        %1 = npu_tile.load %a(%m, %n, %k)[4 * %m, 16 * %k] sizes [4, 16] pad 0.0 : tensor<4x32xf32>
        %2 = npu_tile.load %bw(%m, %n, %k)[16 * %n, 16 * %k] sizes [16, 16] pad 0.0 : tensor<16x32xf32>
        %3 = npu_graph.gemm %1, %2 {trans_b = true} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
        %4 = npu_tile.reduce %3 : tensor<4x16xf32> -> tensor<4x16xf32>
        %5 = npu_tile.load %c(%m, %n, %k)[0, 16 * %n] sizes [1, 16] view [1, 16] : tensor<16xf32>
        %6 = npu_graph.add %4, %5 : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
        npu_tile.store %6(%m, %n, %k)[4 * %m, 16 * %n] sizes [4, 16] : tensor<4x16xf32>
      }
      npu_tile.yield %0 : tensor<4x16xf32>
    }
    func.return %y : tensor<4x16xf32>
  }
}

// -----

// Double buffering (PrefetchLoads): the first step's tile is copied before the loop;
// step t copies step t+1's tile into the other slot (by the parity of t - t0), then
// waits for its own (the token carried by the loop); the last step is peeled. With
// one step per output tile and SRAM to spare, the output tile alternates between two
// buffers too and a step's store is awaited only before the next step's store (its
// token carried, starting from npu_dma.done); the last step awaits its own.
// CHECK-LABEL: npu_task.task "act"
// CHECK:         %[[S0:.*]] = npu_task.sram {offset = 0 : i64} : memref<2x64xf32, "sram">
// CHECK-NEXT:    %[[S1:.*]] = npu_task.sram {offset = 512 : i64} : memref<2x64xf32, "sram">
// CHECK-NEXT:    %[[ACC:.*]] = npu_task.sram {offset = 1024 : i64} : memref<2x64xf32, "sram">
// CHECK-NEXT:    %[[ACC1:.*]] = npu_task.sram {offset = 1536 : i64} : memref<2x64xf32, "sram">
// CHECK-NEXT:    arith.muli
// CHECK-NEXT:    %[[C0:.*]] = npu_dma.copy %{{.*}} -> %[[S0]]
// CHECK-NEXT:    %[[TLAST:.*]] = arith.subi
// CHECK-NEXT:    %[[NONE:.*]] = npu_dma.done
// CHECK-NEXT:    %[[TOK:.*]], %[[STOK:.*]] = scf.for %[[T:.*]] = %[[T0:.*]] to %[[TLAST]] step %{{.*}} iter_args(%[[PREV:.*]] = %[[C0]], %[[PST:.*]] = %[[NONE]]) -> (!npu_dma.token, !npu_dma.token) {
// CHECK-NEXT:      %[[REL:.*]] = arith.subi %[[T]], %[[T0]] : index
// CHECK-NEXT:      arith.remui %[[REL]]
// CHECK-NEXT:      %[[ODD:.*]] = arith.cmpi eq
// CHECK-NEXT:      %[[CUR:.*]] = arith.select %[[ODD]], %[[S1]], %[[S0]]
// CHECK-NEXT:      %[[OUT:.*]] = arith.select %[[ODD]], %[[ACC1]], %[[ACC]]
// CHECK-NEXT:      %[[NXT:.*]] = arith.select %[[ODD]], %[[S0]], %[[S1]]
// CHECK-NEXT:      %[[T1:.*]] = arith.addi %[[T]], %{{.*}} : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.muli %[[T1]]
// CHECK-NEXT:      %[[CN:.*]] = npu_dma.copy %{{.*}}[%[[ROW]], %{{.*}}] -> %[[NXT]]
// CHECK-NEXT:      npu_dma.wait %[[PREV]]
// CHECK-NEXT:      npu_compute.eltwise relu %[[CUR]] -> %[[OUT]]
// CHECK-NEXT:      arith.muli
// CHECK-NEXT:      npu_dma.wait %[[PST]]
// CHECK-NEXT:      %[[ST:.*]] = npu_dma.copy %[[OUT]]
// CHECK-NEXT:      scf.yield %[[CN]], %[[ST]] : !npu_dma.token, !npu_dma.token
// CHECK-NEXT:    }
// CHECK:         %[[LCUR:.*]] = arith.select %{{.*}}, %[[S1]], %[[S0]]
// CHECK-NEXT:    %[[LOUT:.*]] = arith.select %{{.*}}, %[[ACC1]], %[[ACC]]
// CHECK-NEXT:    npu_dma.wait %[[TOK]]
// CHECK-NEXT:    npu_compute.eltwise relu %[[LCUR]] -> %[[LOUT]]
// CHECK-NEXT:    arith.muli
// CHECK-NEXT:    npu_dma.wait %[[STOK]]
// CHECK-NEXT:    %[[LST:.*]] = npu_dma.copy %[[LOUT]]
// CHECK-NEXT:    npu_dma.wait %[[LST]]
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %z = npu_tile.kernel "act"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 2, 64>, grid = array<i64: 4, 1>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>):
      %0 = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 2, 64>, grid = array<i64: 4, 1>, reductions = 0 : i64, double_buffer} -> tensor<8x64xf32> {
      ^bb0(%d0: index, %d1: index):
        %1 = npu_tile.load %a(%d0, %d1)[2 * %d0, 64 * %d1] sizes [2, 64] : tensor<8x64xf32>
        %2 = npu_graph.relu %1 : (tensor<2x64xf32>) -> tensor<2x64xf32>
        %3 = npu_tile.reduce %2 : tensor<2x64xf32> -> tensor<2x64xf32>
        npu_tile.store %3(%d0, %d1)[2 * %d0, 64 * %d1] sizes [2, 64] : tensor<2x64xf32>
      }
      npu_tile.yield %0 : tensor<8x64xf32>
    }
    func.return %z : tensor<8x64xf32>
  }
}

// -----

// Not deferred: SRAM (1536 bytes) holds the two input slots and one output tile but
// not a second one, so each step awaits its store before the next step writes it.
// CHECK-LABEL: npu_task.task "act_tight"
// CHECK:         %[[ACC:.*]] = npu_task.sram {offset = 1024 : i64} : memref<2x64xf32, "sram">
// CHECK-NOT:     npu_task.sram
// CHECK-NOT:     npu_dma.done
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (!npu_dma.token) {
// CHECK:           npu_compute.eltwise relu %{{.*}} -> %[[ACC]]
// CHECK-NEXT:      arith.muli
// CHECK-NEXT:      %[[ST:.*]] = npu_dma.copy %[[ACC]]
// CHECK-NEXT:      npu_dma.wait %[[ST]]
// CHECK-NEXT:      scf.yield
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 1536>} {
  func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %z = npu_tile.kernel "act_tight"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 2, 64>, grid = array<i64: 4, 1>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>):
      %0 = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 2, 64>, grid = array<i64: 4, 1>, reductions = 0 : i64, double_buffer} -> tensor<8x64xf32> {
      ^bb0(%d0: index, %d1: index):
        %1 = npu_tile.load %a(%d0, %d1)[2 * %d0, 64 * %d1] sizes [2, 64] : tensor<8x64xf32>
        %2 = npu_graph.relu %1 : (tensor<2x64xf32>) -> tensor<2x64xf32>
        %3 = npu_tile.reduce %2 : tensor<2x64xf32> -> tensor<2x64xf32>
        npu_tile.store %3(%d0, %d1)[2 * %d0, 64 * %d1] sizes [2, 64] : tensor<2x64xf32>
      }
      npu_tile.yield %0 : tensor<8x64xf32>
    }
    func.return %z : tensor<8x64xf32>
  }
}
