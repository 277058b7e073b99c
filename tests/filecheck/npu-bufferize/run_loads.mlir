// RUN: %opt %s --split-input-file -p npu-bufferize | filecheck %s
// A pipelined load whose window stays put over runs of steps (`run_steps`: one
// reduction step per output tile, and loops after the last one it moves with that
// iterate) is copied only at a run's first step: the task's first (t == t0) and each
// t with t % L == 0, in an `scf.if` yielding the copy's token (`npu_dma.done` at the
// other steps), awaited where the step's loads are.

// Single buffered: x's rows (moving with m) stay put over the 4 steps along n: its
// copy is issued at t == t0 or t % 4 == 0; w's window moves every step (a plain copy).
// CHECK-LABEL: npu_task.task "mm"
// CHECK:         %[[SX:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
// CHECK-NEXT:    %[[SW:.*]] = npu_task.sram {offset = 512 : i64} : memref<32x16xf32, "sram">
// CHECK:         scf.for %[[T:.*]] = %[[T0:.*]] to %{{.*}} step %{{.*}} {
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %[[T0]] : index
// CHECK-NEXT:      %[[R:.*]] = arith.remui %[[T]], %[[C4:.*]] : index
// CHECK-NEXT:      %[[AT:.*]] = arith.cmpi eq, %[[R]], %{{.*}} : index
// CHECK-NEXT:      %[[START:.*]] = arith.ori %[[FIRST]], %[[AT]] : i1
// CHECK-NEXT:      %[[TX:.*]] = scf.if %[[START]] -> (!npu_dma.token) {
// CHECK-NEXT:        %[[CX:.*]] = npu_dma.copy %{{.*}} -> %[[SX]]
// CHECK-NEXT:        scf.yield %[[CX]] : !npu_dma.token
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[NONE:.*]] = npu_dma.done
// CHECK-NEXT:        scf.yield %[[NONE]] : !npu_dma.token
// CHECK-NEXT:      }
// CHECK-NEXT:      arith.muli
// CHECK-NEXT:      %[[CW:.*]] = npu_dma.copy %{{.*}} -> %[[SW]]
// CHECK-NEXT:      npu_dma.wait %[[TX]]
// CHECK-NEXT:      npu_dma.wait %[[CW]]
// CHECK-NEXT:      npu_compute.matmul %[[SX]], %[[SW]]
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> {
    %y = npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 32>, grid = array<i64: 2, 4, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x32xf32>, %b: tensor<32x64xf32>):
      %0 = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 32>, grid = array<i64: 2, 4, 1>, reductions = 1 : i64} -> tensor<8x64xf32> {
      ^bb0(%m: index, %n: index, %k: index):
        %1 = npu_tile.load %a(%m, %n, %k)[4 * %m, 32 * %k] sizes [4, 32] : tensor<8x32xf32>
        %2 = npu_tile.load %b(%m, %n, %k)[32 * %k, 16 * %n] sizes [32, 16] : tensor<32x64xf32>
        %3 = npu_graph.matmul %1, %2 : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
        %4 = npu_tile.reduce %3 : tensor<4x16xf32> -> tensor<4x16xf32>
        npu_tile.store %4(%m, %n, %k)[4 * %m, 16 * %n] sizes [4, 16] : tensor<4x16xf32>
      }
      npu_tile.yield %0 : tensor<8x64xf32>
    }
    func.return %y : tensor<8x64xf32>
  }
}

// -----

// Double buffered: x's two slots alternate by the parity of its run (t / 4 - t0 / 4),
// w's by the step's (t - t0); the first step's copies go out before the loop (x's
// under the same condition, true there); step t issues x's copy for t + 1 into the
// slot its run does not read only when t + 1 starts a run, and waits for the token
// carried from the step before (the copy's, or `npu_dma.done`).
// CHECK-LABEL: npu_task.task "mm"
// CHECK:         %[[X0:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
// CHECK-NEXT:    %[[W0:.*]] = npu_task.sram {offset = 512 : i64} : memref<32x16xf32, "sram">
// CHECK-NEXT:    %[[X1:.*]] = npu_task.sram {offset = 2560 : i64} : memref<4x32xf32, "sram">
// CHECK-NEXT:    %[[W1:.*]] = npu_task.sram {offset = 3072 : i64} : memref<32x16xf32, "sram">
// CHECK:         %[[TX0:.*]] = scf.if %{{.*}} -> (!npu_dma.token) {
// CHECK-NEXT:      npu_dma.copy %{{.*}} -> %[[X0]]
// CHECK:         %[[CW0:.*]] = npu_dma.copy %{{.*}} -> %[[W0]]
// CHECK:         scf.for %[[T:.*]] = %[[T0:.*]] to %{{.*}} step %{{.*}} iter_args(%[[PX:.*]] = %[[TX0]], %[[PW:.*]] = %[[CW0]]
// CHECK-NEXT:      %[[RI:.*]] = arith.divui %[[T]], %[[C4:.*]] : index
// CHECK-NEXT:      %[[RI0:.*]] = arith.divui %[[T0]], %[[C4]] : index
// CHECK-NEXT:      %[[RREL:.*]] = arith.subi %[[RI]], %[[RI0]] : index
// CHECK-NEXT:      arith.remui %[[RREL]]
// CHECK-NEXT:      %[[RODD:.*]] = arith.cmpi eq
// CHECK-NEXT:      %[[REL:.*]] = arith.subi %[[T]], %[[T0]] : index
// CHECK-NEXT:      arith.remui %[[REL]]
// CHECK-NEXT:      %[[ODD:.*]] = arith.cmpi eq
// CHECK-NEXT:      %[[XCUR:.*]] = arith.select %[[RODD]], %[[X1]], %[[X0]]
// CHECK-NEXT:      %[[WCUR:.*]] = arith.select %[[ODD]], %[[W1]], %[[W0]]
// CHECK-NEXT:      arith.select %[[ODD]]
// CHECK-NEXT:      %[[XNXT:.*]] = arith.select %[[RODD]], %[[X0]], %[[X1]]
// CHECK-NEXT:      %[[WNXT:.*]] = arith.select %[[ODD]], %[[W0]], %[[W1]]
// CHECK-NEXT:      %[[T1:.*]] = arith.addi %[[T]], %{{.*}} : index
// CHECK:           arith.cmpi eq, %[[T1]], %[[T0]] : index
// CHECK-NEXT:      arith.remui %[[T1]], %[[C4]] : index
// CHECK:           %[[TX:.*]] = scf.if %{{.*}} -> (!npu_dma.token) {
// CHECK-NEXT:        %[[CX:.*]] = npu_dma.copy %{{.*}} -> %[[XNXT]]
// CHECK-NEXT:        scf.yield %[[CX]] : !npu_dma.token
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[NONE:.*]] = npu_dma.done
// CHECK-NEXT:        scf.yield %[[NONE]] : !npu_dma.token
// CHECK-NEXT:      }
// CHECK-NEXT:      arith.muli
// CHECK-NEXT:      %[[CW:.*]] = npu_dma.copy %{{.*}} -> %[[WNXT]]
// CHECK-NEXT:      npu_dma.wait %[[PX]]
// CHECK-NEXT:      npu_dma.wait %[[PW]]
// CHECK:           npu_compute.matmul %[[XCUR]], %[[WCUR]]
// CHECK:           scf.yield %[[TX]], %[[CW]]
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> {
    %y = npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 32>, grid = array<i64: 2, 4, 1>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x32xf32>, %b: tensor<32x64xf32>):
      %0 = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 32>, grid = array<i64: 2, 4, 1>, reductions = 1 : i64, double_buffer} -> tensor<8x64xf32> {
      ^bb0(%m: index, %n: index, %k: index):
        %1 = npu_tile.load %a(%m, %n, %k)[4 * %m, 32 * %k] sizes [4, 32] : tensor<8x32xf32>
        %2 = npu_tile.load %b(%m, %n, %k)[32 * %k, 16 * %n] sizes [32, 16] : tensor<32x64xf32>
        %3 = npu_graph.matmul %1, %2 : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
        %4 = npu_tile.reduce %3 : tensor<4x16xf32> -> tensor<4x16xf32>
        npu_tile.store %4(%m, %n, %k)[4 * %m, 16 * %n] sizes [4, 16] : tensor<4x16xf32>
      }
      npu_tile.yield %0 : tensor<8x64xf32>
    }
    func.return %y : tensor<8x64xf32>
  }
}

// -----

// Must not fire: with K steps (reductions over k) x moves with k every step; w's
// window moves with n, the innermost loop that iterates: both plain copies.
// CHECK-LABEL: npu_task.task "mm"
// CHECK:         scf.for
// CHECK-NOT:       !npu_dma.token
// CHECK-NOT:       npu_dma.done
// CHECK:         func.return
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> {
    %y = npu_tile.kernel "mm"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 2, 4, 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x32xf32>, %b: tensor<32x64xf32>):
      %0 = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 2, 4, 2>, reductions = 1 : i64} -> tensor<8x64xf32> {
      ^bb0(%m: index, %n: index, %k: index):
        %1 = npu_tile.load %a(%m, %n, %k)[4 * %m, 16 * %k] sizes [4, 16] : tensor<8x32xf32>
        %2 = npu_tile.load %b(%m, %n, %k)[16 * %k, 16 * %n] sizes [16, 16] : tensor<32x64xf32>
        %3 = npu_graph.matmul %1, %2 : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
        %4 = npu_tile.reduce %3 : tensor<4x16xf32> -> tensor<4x16xf32>
        npu_tile.store %4(%m, %n, %k)[4 * %m, 16 * %n] sizes [4, 16] : tensor<4x16xf32>
      }
      npu_tile.yield %0 : tensor<8x64xf32>
    }
    func.return %y : tensor<8x64xf32>
  }
}
