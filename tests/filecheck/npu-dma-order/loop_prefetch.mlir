// RUN: %opt %s -p npu-dma-order | filecheck %s
// RUN: npu-opt %s -p npu-unit-sync -o %t.before.mlir && npu-run %t.before.mlir --timing-only | filecheck %s --check-prefix=BEFORE
// RUN: npu-opt %s -p npu-dma-order,npu-unit-sync -o %t.mlir && npu-run %t.mlir --timing-only | filecheck %s --check-prefix=AFTER

// A double-buffered step loop as npu-bufferize leaves it: each step issues the next
// step's three loads (two 256-byte rows, a 16 KiB weight tile) at its top, while the
// store of the step before (64 KiB, awaited only before this step's store) still holds
// one of the two DMA channels: the second load stalls the core until the first lands,
// the third until the second does. The loads only the next step reads (their tokens go
// to the yield) are issued once a channel is free by the simulator's rules: the first
// at the top, the others after the matmul and the first add, with no stall
// (7090 -> 5684 cycles, with the fences npu-unit-sync adds for the concurrent units).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: memref<256x64xf32, "dram">, %w: memref<320x64xf32, "dram">, %b: memref<5x64xf32, "dram">, %y: memref<1024x64xf32, "dram">) attributes {npu.inputs = ["x", "w", "b"], npu.outputs = ["y"]} {
    npu_task.task "steps" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %c256 = arith.constant 256 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<256x64xf32, "sram">
      %w0 = npu_task.sram {offset = 65536 : i64} : memref<64x64xf32, "sram">
      %w1 = npu_task.sram {offset = 81920 : i64} : memref<64x64xf32, "sram">
      %b0 = npu_task.sram {offset = 98304 : i64} : memref<1x64xf32, "sram">
      %b1 = npu_task.sram {offset = 98560 : i64} : memref<1x64xf32, "sram">
      %c0s = npu_task.sram {offset = 98816 : i64} : memref<1x64xf32, "sram">
      %c1s = npu_task.sram {offset = 99072 : i64} : memref<1x64xf32, "sram">
      %o0 = npu_task.sram {offset = 99328 : i64} : memref<256x64xf32, "sram">
      %o1 = npu_task.sram {offset = 164864 : i64} : memref<256x64xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 256, 64>} : memref<256x64xf32, "dram"> -> memref<256x64xf32, "sram">
      %tb = npu_dma.copy %b[%lo, %c0] -> %b0[%c0, %c0] {sizes = array<i64: 1, 64>} : memref<5x64xf32, "dram"> -> memref<1x64xf32, "sram">
      %tc = npu_dma.copy %b[%lo, %c0] -> %c0s[%c0, %c0] {sizes = array<i64: 1, 64>} : memref<5x64xf32, "dram"> -> memref<1x64xf32, "sram">
      %r0 = arith.muli %lo, %c64 : index
      %tw = npu_dma.copy %w[%r0, %c0] -> %w0[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<320x64xf32, "dram"> -> memref<64x64xf32, "sram">
      %none = npu_dma.done
      npu_dma.wait %tx
      %e0, %e1, %e2, %e3 = scf.for %t = %lo to %hi step %c1 iter_args(%pb = %tb, %pc = %tc, %pw = %tw, %ps = %none) -> (!npu_dma.token, !npu_dma.token, !npu_dma.token, !npu_dma.token) {
        %rel = arith.subi %t, %lo : index
        %par = arith.remui %rel, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %wc = arith.select %odd, %w1, %w0 : memref<64x64xf32, "sram">
        %bc = arith.select %odd, %b1, %b0 : memref<1x64xf32, "sram">
        %cc = arith.select %odd, %c1s, %c0s : memref<1x64xf32, "sram">
        %oc = arith.select %odd, %o1, %o0 : memref<256x64xf32, "sram">
        %wn = arith.select %odd, %w0, %w1 : memref<64x64xf32, "sram">
        %bn = arith.select %odd, %b0, %b1 : memref<1x64xf32, "sram">
        %cn = arith.select %odd, %c0s, %c1s : memref<1x64xf32, "sram">
        %t1 = arith.addi %t, %c1 : index
        %nb = npu_dma.copy %b[%t1, %c0] -> %bn[%c0, %c0] {sizes = array<i64: 1, 64>} : memref<5x64xf32, "dram"> -> memref<1x64xf32, "sram">
        %nc = npu_dma.copy %b[%t1, %c0] -> %cn[%c0, %c0] {sizes = array<i64: 1, 64>} : memref<5x64xf32, "dram"> -> memref<1x64xf32, "sram">
        %r1 = arith.muli %t1, %c64 : index
        %nw = npu_dma.copy %w[%r1, %c0] -> %wn[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<320x64xf32, "dram"> -> memref<64x64xf32, "sram">
        npu_dma.wait %pw
        npu_compute.matmul %sx, %wc -> %oc : memref<256x64xf32, "sram">, memref<64x64xf32, "sram"> -> memref<256x64xf32, "sram">
        npu_dma.wait %pb
        npu_compute.eltwise add %oc, %bc -> %oc : memref<256x64xf32, "sram">, memref<1x64xf32, "sram"> -> memref<256x64xf32, "sram">
        npu_dma.wait %pc
        npu_compute.eltwise add %oc, %cc -> %oc : memref<256x64xf32, "sram">, memref<1x64xf32, "sram"> -> memref<256x64xf32, "sram">
        npu_compute.eltwise relu %oc -> %oc : memref<256x64xf32, "sram"> -> memref<256x64xf32, "sram">
        %ro = arith.muli %t, %c256 : index
        npu_dma.wait %ps
        %st = npu_dma.copy %oc[%c0, %c0] -> %y[%ro, %c0] {sizes = array<i64: 256, 64>} : memref<256x64xf32, "sram"> -> memref<1024x64xf32, "dram">
        scf.yield %nb, %nc, %nw, %st : !npu_dma.token, !npu_dma.token, !npu_dma.token, !npu_dma.token
      }
      npu_dma.wait %e0
      npu_dma.wait %e1
      npu_dma.wait %e2
      npu_dma.wait %e3
    }
    func.return
  }
}
// CHECK-LABEL: npu_task.task "steps"
// CHECK:       scf.for
// CHECK:         %[[NB:.*]] = npu_dma.copy %{{.*}} -> %[[BN:.*]][
// CHECK-NEXT:    arith.muli
// CHECK-NEXT:    npu_dma.wait %[[PW:.*]]
// CHECK-NEXT:    npu_compute.matmul
// CHECK-NEXT:    %[[NC:.*]] = npu_dma.copy
// CHECK-NEXT:    npu_dma.wait
// CHECK-NEXT:    npu_compute.eltwise add
// CHECK-NEXT:    %[[NW:.*]] = npu_dma.copy %{{.*}} -> %{{.*}}{{\[}}%{{.*}}, %{{.*}}] {sizes = array<i64: 64, 64>}
// CHECK-NEXT:    npu_dma.wait
// CHECK-NEXT:    npu_compute.eltwise add
// CHECK-NEXT:    npu_compute.eltwise relu
// CHECK:         npu_dma.wait %[[PS:.*]]
// CHECK-NEXT:    %[[ST:.*]] = npu_dma.copy
// CHECK-NEXT:    scf.yield %[[NB]], %[[NC]], %[[NW]], %[[ST]]

// BEFORE: cycles: 7090
// AFTER:  cycles: 5684
