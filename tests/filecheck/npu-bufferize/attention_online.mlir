// RUN: %opt %s -p npu-tile,npu-tile-loops | filecheck %s --check-prefix=LOOP
// RUN: %opt %s -p npu-tile,npu-tile-loops,npu-bufferize | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// Flash attention: with 32 KiB of SRAM per core a tile cannot hold its head's
// whole kt and v (2 x 16 KiB) and score rows, so the keys come in blocks of 16
// (t, the reduction loop, 8 steps): the tile op is `online`, its result the block's
// online-softmax state (32 output columns, then the row max and sum), and
// npu_tile.reduce merges the states; the store writes the output columns.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 32768>} {
  func.func @main(%q: tensor<1x4x64x32xf32>, %kt: tensor<1x4x32x128xf32>, %v: tensor<1x4x128x32xf32>, %mask: tensor<1x1x1x128xf32>) -> tensor<1x4x64x32xf32> attributes {npu.inputs = ["q", "kt", "v", "mask"], npu.outputs = ["o"]} {
    %o = npu_graph.attention %q, %kt, %v, %mask {scale = 0.176776692 : f32} : (tensor<1x4x64x32xf32>, tensor<1x4x32x128xf32>, tensor<1x4x128x32xf32>, tensor<1x1x1x128xf32>) -> tensor<1x4x64x32xf32> loc("attn")
    func.return %o : tensor<1x4x64x32xf32>
  }
}
// LOOP:      npu_tile.loop {loops = ["d0", "d1", "d2", "d3", "t"], tile = array<i64: 1, 1, 64, 32, 16>, grid = array<i64: 1, 4, 1, 1, 8>, reductions = 1 : i64, double_buffer}
// LOOP-NEXT: ^bb0(%d0: index, %d1: index, %d2: index, %d3: index, %t: index):
// LOOP-NEXT:   %[[Q:.*]] = npu_tile.load %0(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 64 * %d2, 0] sizes [1, 1, 64, 32]
// LOOP-NEXT:   %[[K:.*]] = npu_tile.load %1(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 0, 16 * %t] sizes [1, 1, 32, 16]
// LOOP-NEXT:   %[[V:.*]] = npu_tile.load %2(%d0, %d1, %d2, %d3, %t)[%d0, %d1, 16 * %t, 0] sizes [1, 1, 16, 32]
// LOOP-NEXT:   %[[M:.*]] = npu_tile.load %3(%d0, %d1, %d2, %d3, %t)[%d0, 0, 0, 16 * %t] sizes [1, 1, 1, 16]
// LOOP-NEXT:   %[[A:.*]] = npu_graph.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 0.176776692 : f32, online} : {{.*}} -> tensor<1x1x64x34xf32>
// LOOP-NEXT:   %[[R:.*]] = npu_tile.reduce %[[A]] {combine = "online_softmax"} : tensor<1x1x64x34xf32> -> tensor<1x1x64x34xf32>
// LOOP-NEXT:   npu_tile.store %[[R]](%d0, %d1, %d2, %d3, %t)[%d0, %d1, 64 * %d2, 32 * %d3] sizes [1, 1, 64, 32] : tensor<1x1x64x34xf32>

// The key blocks of kt and v are double buffered and prefetched. The mask's would be
// a third load a step (64 bytes) on the core's two DMA channels, each step stalling
// for a channel: its 8 blocks (512 bytes, under dram_bw x dma_latency) load as one,
// once per task before the steps, and each step reads its block through an
// `npu_task.view` at the key-block index. The query rows stay put over an output
// tile's key blocks, so they are loaded once per output tile into one slot: the
// task's first tile's at its first step, before the next block's prefetch (the block
// computes from them; the prefetch only has to land by the next block), every other
// tile's at the tile before's last step, right after its store goes out, so the two
// transfers overlap (the store is awaited after the load). The state's accumulator
// has the 2 extra columns; the first key block writes it, the others merge into it
// (`accumulate`: the op's online-softmax combine), keeping the output unnormalised
// (FlashAttention-2); the last block's merge, `finish`, divides it by the row sums
// before the store.
// CHECK:      %[[MASK:.*]] = npu_task.sram {offset = 8192 : i64} : memref<1x1x1x128xf32, "sram">
// CHECK-NEXT: %[[QS:.*]] = npu_task.sram {offset = 8704 : i64} : memref<1x1x64x32xf32, "sram">
// CHECK-NEXT: %[[ACC:.*]] = npu_task.sram {offset = 16896 : i64} : memref<1x1x64x34xf32, "sram">
// CHECK-NEXT: %[[T0:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[TEND:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[TM:.*]] = npu_dma.copy %3[{{.*}}] -> %[[MASK]][{{.*}}] {sizes = array<i64: 1, 1, 1, 128>, pad_value = 0.000000e+00 : f32}
// CHECK:      scf.for %[[T:.*]] = %[[T0]] to
// CHECK:        %[[R:.*]] = arith.remui %[[T]], %{{.*}} : index
// CHECK-NEXT:   %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %[[T0]] : index
// CHECK-NEXT:   npu_dma.wait %[[TM]]
// CHECK-NEXT:   scf.if %[[FIRST]] {
// CHECK-NEXT:     %[[C:.*]] = npu_dma.copy %0[{{.*}}] -> %[[QS]][{{.*}}] {sizes = array<i64: 1, 1, 64, 32>, pad_value = 0.000000e+00 : f32}
// CHECK-NEXT:     npu_dma.wait %[[C]]
// CHECK-NEXT:   }
// CHECK-NOT:    -> %[[MASK]]
// CHECK-COUNT-2: npu_dma.copy
// CHECK-COUNT-2: npu_dma.wait
// CHECK-NEXT:   %[[MB:.*]] = npu_task.view %[[MASK]][%[[R]]] : memref<1x1x1x128xf32, "sram"> to memref<1x1x1x16xf32, "sram">
// CHECK:        scf.if
// CHECK-NEXT:     npu_compute.apply "npu_graph.attention" %[[QS]], %{{.*}}, %{{.*}}, %[[MB]] -> %[[ACC]] {attrs = {scale = 0.176776692 : f32, online}} :
// CHECK-NEXT:   } else {
// CHECK-NEXT:     %[[LAST:.*]] = arith.cmpi eq, %[[R]], %{{.*}} : index
// CHECK-NEXT:     scf.if %[[LAST]] {
// CHECK-NEXT:       npu_compute.apply "npu_graph.attention" %[[QS]], %{{.*}}, %{{.*}}, %[[MB]] -> %[[ACC]] {attrs = {scale = 0.176776692 : f32, online, finish}, accumulate} :
// CHECK-NEXT:     } else {
// CHECK-NEXT:       npu_compute.apply "npu_graph.attention" %[[QS]], %{{.*}}, %{{.*}}, %[[MB]] -> %[[ACC]] {attrs = {scale = 0.176776692 : f32, online}, accumulate} :
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[LAST2:.*]] = arith.cmpi eq, %[[R]], %{{.*}} : index
// CHECK-NEXT:   scf.if %[[LAST2]]
// CHECK-NEXT:     %[[ST:.*]] = npu_dma.copy %[[ACC]][{{.*}}] -> %{{.*}}[{{.*}}] {sizes = array<i64: 1, 1, 64, 32>, clip} : memref<1x1x64x34xf32, "sram"> -> memref<1x4x64x32xf32, "dram">
// CHECK-NEXT:     %[[T1:.*]] = arith.addi %[[T]], %{{.*}} : index
// CHECK-NEXT:     %[[MORE:.*]] = arith.cmpi slt, %[[T1]], %[[TEND]] : index
// CHECK-NEXT:     scf.if %[[MORE]] {
// CHECK-NEXT:       %[[TILE:.*]] = arith.divui %[[T1]], %{{.*}} : index
// CHECK-NEXT:       %[[NQ:.*]] = npu_dma.copy %0[%{{.*}}, %[[TILE]], %{{.*}}, %{{.*}}] -> %[[QS]][{{.*}}] {sizes = array<i64: 1, 1, 64, 32>, pad_value = 0.000000e+00 : f32}
// CHECK-NEXT:       npu_dma.wait %[[NQ]]
// CHECK-NEXT:     }
// CHECK-NEXT:     npu_dma.wait %[[ST]]

// SIM: check:       ok vs numpy float64 reference
