// RUN: %opt %s --split-input-file -p npu-tile-loops,npu-bufferize | filecheck %s

// gemm + bias + relu with two reduction tiles, double buffered.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>) -> tensor<4x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x32xf32>
    %b = npu_graph.constant {value = dense<0.5> : tensor<16xf32>} : tensor<16xf32>
    %y = npu_tile.kernel "fc"(%x, %w, %b) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 16>, grid = array<i64: 1, 1, 2>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 100 : i64} : (tensor<4x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x32xf32>, %bw: tensor<16x32xf32>, %c: tensor<16xf32>):
      %g = npu_graph.gemm %a, %bw, %c {trans_b = true} : (tensor<4x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<4x16xf32>
      %r = npu_graph.relu %g : (tensor<4x16xf32>) -> tensor<4x16xf32>
      npu_tile.yield %r : tensor<4x16xf32>
    }
    func.return %y : tensor<4x16xf32>
  }
}
// The output becomes a destination argument; constants become weights, the
// bias is viewed with the output's rank for broadcasting.
// CHECK:      func.func @main(%[[X:.*]]: memref<4x32xf32, "dram">, %[[Y:.*]]: memref<4x16xf32, "dram">) {
// CHECK-NEXT:   %[[W:.*]] = npu_task.weight "w" : memref<16x32xf32, "dram">
// CHECK-NEXT:   %[[B:.*]] = npu_task.weight "inline1" {value = dense<5.000000e-01> : tensor<16xf32>} : memref<16xf32, "dram">
// CHECK-NEXT:   %[[BV:.*]] = npu_task.view %[[B]] : memref<16xf32, "dram"> to memref<1x16xf32, "dram">
// CHECK-NEXT:   npu_task.task "fc" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 100 : i64} {
// CHECK-NEXT:   ^{{.*}}(%[[LO:.*]]: index, %[[HI:.*]]: index):
// Two slots per pipelined input, one buffer for the bias (loaded at the last k step), one accumulator.
// CHECK:        %[[A0:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x16xf32, "sram">
// CHECK-NEXT:   %[[B0:.*]] = npu_task.sram {offset = 256 : i64} : memref<16x16xf32, "sram">
// CHECK-NEXT:   %[[A1:.*]] = npu_task.sram {offset = 1280 : i64} : memref<4x16xf32, "sram">
// CHECK-NEXT:   %[[B1:.*]] = npu_task.sram {offset = 1536 : i64} : memref<16x16xf32, "sram">
// CHECK-NEXT:   %[[BIAS:.*]] = npu_task.sram {offset = 2560 : i64} : memref<1x16xf32, "sram">
// CHECK-NEXT:   %[[ACC:.*]] = npu_task.sram {offset = 2624 : i64} : memref<4x16xf32, "sram">
// Prologue: the first step's tiles go to slot 0.
// CHECK:        %[[T0:.*]] = npu_dma.copy %[[X]][{{.*}}] -> %[[A0]]{{.*}}pad_value = 0.000000e+00 : f32
// CHECK:        %[[T1:.*]] = npu_dma.copy %[[W]][{{.*}}] -> %[[B0]]
// Steady state: prefetch step t+1 into the other slot, then wait for step t and compute.
// CHECK:        scf.for %[[T:.*]] = {{.*}} iter_args(%[[TA:.*]] = %[[T0]], %[[TB:.*]] = %[[T1]]) -> (!npu_dma.token, !npu_dma.token) {
// CHECK:          %[[CUR:.*]] = arith.select %[[ODD:.*]], %[[A1]], %[[A0]]
// CHECK:          %[[NXT:.*]] = arith.select %[[ODD]], %[[A0]], %[[A1]]
// CHECK:          npu_dma.copy %[[X]][{{.*}}] -> %[[NXT]]
// CHECK:          npu_dma.wait %[[TA]]
// CHECK-NEXT:     npu_dma.wait %[[TB]]
// The first k step overwrites the accumulator, later ones accumulate.
// CHECK:          scf.if
// CHECK-NEXT:       npu_compute.matmul %[[CUR]], {{.*}} -> %[[ACC]] {trans_b}
// CHECK-NEXT:     } else {
// CHECK-NEXT:       npu_compute.matmul %[[CUR]], {{.*}} -> %[[ACC]] {trans_b, accumulate}
// The last k step runs the epilogue and stores the tile, clipped at the tensor edge.
// CHECK:          scf.if
// CHECK-NEXT:       %[[TBIAS:.*]] = npu_dma.copy %[[BV]]{{.*}} -> %[[BIAS]]
// CHECK-NEXT:       npu_dma.wait %[[TBIAS]]
// CHECK-NEXT:       npu_compute.eltwise add %[[ACC]], %[[BIAS]] -> %[[ACC]]
// CHECK-NEXT:       npu_compute.eltwise relu %[[ACC]] -> %[[ACC]]
// CHECK-NEXT:       %[[ST:.*]] = npu_dma.copy %[[ACC]][{{.*}}] -> %[[Y]][{{.*}}] {sizes = array<i64: 4, 16>, clip}
// CHECK-NEXT:       npu_dma.wait %[[ST]]
// CHECK:          scf.yield
// The last step is peeled: it waits for the loop's final tokens.
// CHECK:        npu_dma.wait
// CHECK:        npu_compute.matmul
// CHECK:      func.return

// -----

// Without double buffering: one slot, load-wait-compute-store per step; a conv
// input window carries its halo at a negative offset, zero padded.
builtin.module {
  func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<2x2x3x3xf32>
    %y = npu_tile.kernel "conv"(%x, %w) conv2d {loops = ["n", "co", "oh", "ow", "ci"], tile = array<i64: 1, 2, 2, 4, 2>, grid = array<i64: 1, 1, 2, 1, 1>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 10 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32> {
    ^bb0(%a: tensor<1x2x4x4xf32>, %b: tensor<2x2x3x3xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
      npu_tile.yield %c : tensor<1x2x4x4xf32>
    }
    func.return %y : tensor<1x2x4x4xf32>
  }
}
// CHECK:      npu_task.task "conv" attributes {core = 0 : i64, range = array<i64: 0, 2>
// CHECK:        %[[IN:.*]] = npu_task.sram {offset = 0 : i64} : memref<1x2x4x6xf32, "sram">
// CHECK-NEXT:   %[[WT:.*]] = npu_task.sram {offset = 192 : i64} : memref<2x2x3x3xf32, "sram">
// CHECK-NEXT:   %[[OUT:.*]] = npu_task.sram {offset = 384 : i64} : memref<1x2x2x4xf32, "sram">
// CHECK:        scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:      arith.select
// CHECK:          %[[ROW:.*]] = arith.muli %[[T]], %{{.*}} : index
// CHECK-NEXT:     %[[HALO:.*]] = arith.addi %[[ROW]], %{{.*}} : index
// CHECK-NEXT:     %[[TI:.*]] = npu_dma.copy %{{.*}}[%{{.*}}, %{{.*}}, %[[HALO]], %{{.*}}] -> %[[IN]]{{.*}}sizes = array<i64: 1, 2, 4, 6>, pad_value = 0.000000e+00 : f32
// CHECK:          npu_dma.wait %[[TI]]
// CHECK:          npu_compute.conv2d %[[IN]], %[[WT]] -> %[[OUT]] {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
// CHECK:          npu_dma.copy %[[OUT]]{{.*}}clip

// -----

// A view kernel is a view of its source's bytes; a returned model input is copied.
builtin.module {
  func.func @main(%x: tensor<2x6xf32>) -> (tensor<3x4xf32>, tensor<2x6xf32>) {
    %v = npu_tile.kernel "flat"(%x) view {loops = [], tile = array<i64>, grid = array<i64>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64} : (tensor<2x6xf32>) -> tensor<3x4xf32> {
    ^bb0(%a: tensor<2x6xf32>):
      %r = npu_graph.reshape %a : (tensor<2x6xf32>) -> tensor<3x4xf32>
      npu_tile.yield %r : tensor<3x4xf32>
    }
    func.return %v, %x : tensor<3x4xf32>, tensor<2x6xf32>
  }
}
// CHECK:      func.func @main(%[[X:.*]]: memref<2x6xf32, "dram">, %[[O0:.*]]: memref<3x4xf32, "dram">, %[[O1:.*]]: memref<2x6xf32, "dram">) {
// CHECK-NEXT:   %[[V:.*]] = npu_task.view %[[X]] : memref<2x6xf32, "dram"> to memref<3x4xf32, "dram">
// CHECK:        npu_task.task "output0_copy"
// CHECK:          npu_dma.copy %[[V]]{{.*}} -> %[[O0]]
// CHECK:        npu_task.task "output1_copy"
// CHECK:          npu_dma.copy %[[X]]{{.*}} -> %[[O1]]
