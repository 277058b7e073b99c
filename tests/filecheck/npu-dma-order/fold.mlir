// RUN: %opt %s --split-input-file -p npu-dma-order | filecheck %s

// A strip loop that runs once for the task's range [2, 3) becomes its body (the
// induction variable is the lower bound): the weights' wait moves into what was the
// body, down to the conv, so the relu of the strip's input runs while they land. (The
// two loads keep their order: on two channels both move at once either way.)
builtin.module {
  func.func @main(%x: memref<4x8x16x16xf32, "dram">, %w: memref<8x8x1x1xf32, "dram">, %y: memref<4x8x16x16xf32, "dram">) {
    npu_task.task "strips" attributes {core = 0 : i64, range = array<i64: 2, 3>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %sw = npu_task.sram {offset = 0 : i64} : memref<8x8x1x1xf32, "sram">
      %sx = npu_task.sram {offset = 256 : i64} : memref<1x8x16x16xf32, "sram">
      %sy = npu_task.sram {offset = 8448 : i64} : memref<1x8x16x16xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0, %c0, %c0] -> %sw[%c0, %c0, %c0, %c0] {sizes = array<i64: 8, 8, 1, 1>} : memref<8x8x1x1xf32, "dram"> -> memref<8x8x1x1xf32, "sram">
      npu_dma.wait %tw
      scf.for %s = %lo to %hi step %c1 {
        %tx = npu_dma.copy %x[%s, %c0, %c0, %c0] -> %sx[%c0, %c0, %c0, %c0] {sizes = array<i64: 1, 8, 16, 16>} : memref<4x8x16x16xf32, "dram"> -> memref<1x8x16x16xf32, "sram">
        npu_dma.wait %tx
        npu_compute.eltwise relu %sx -> %sx : memref<1x8x16x16xf32, "sram"> -> memref<1x8x16x16xf32, "sram">
        npu_compute.conv2d %sx, %sw -> %sy {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<1x8x16x16xf32, "sram">, memref<8x8x1x1xf32, "sram"> -> memref<1x8x16x16xf32, "sram">
        %ts = npu_dma.copy %sy[%c0, %c0, %c0, %c0] -> %y[%s, %c0, %c0, %c0] {sizes = array<i64: 1, 8, 16, 16>} : memref<1x8x16x16xf32, "sram"> -> memref<4x8x16x16xf32, "dram">
        npu_dma.wait %ts
      }
    }
    func.return
  }
}
// CHECK:      ^bb0(%[[LO:[a-z0-9_]+]]: index, %{{.*}}: index):
// CHECK-NOT:  scf.for
// CHECK:      %[[TW:.*]] = npu_dma.copy
// CHECK-NEXT: %[[TX:.*]] = npu_dma.copy %{{.*}}[%[[LO]], %{{.*}}, %{{.*}}, %{{.*}}] -> %{{.*}}
// CHECK-NEXT: npu_dma.wait %[[TX]]
// CHECK-NEXT: npu_compute.eltwise relu
// CHECK-NEXT: npu_dma.wait %[[TW]]
// CHECK-NEXT: npu_compute.conv2d
// CHECK-NEXT: %[[TS:.*]] = npu_dma.copy %{{.*}} -> %{{.*}}[%[[LO]], %{{.*}}, %{{.*}}, %{{.*}}]
// CHECK-NEXT: npu_dma.wait %[[TS]]

// -----

// A software-pipelined loop that never runs for the range [0, 1) goes: its results are
// the prologue's tokens, which the epilogue's waits then name directly (and sink).
// A loop that runs twice for the range [0, 2) stays.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %b: memref<32xf32, "dram">) {
    npu_task.task "never" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %sb = npu_task.sram {offset = 512 : i64} : memref<32xf32, "sram">
      %t0 = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %b0 = npu_dma.copy %b[%c0] -> %sb[%c0] {sizes = array<i64: 32>} : memref<32xf32, "dram"> -> memref<32xf32, "sram">
      %last = arith.subi %hi, %c1 : index
      %r, %rb = scf.for %i = %lo to %last step %c1 iter_args(%w = %t0, %wb = %b0) -> (!npu_dma.token, !npu_dma.token) {
        npu_dma.wait %w
        npu_dma.wait %wb
        npu_compute.eltwise relu %a -> %a : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        npu_compute.eltwise add %a, %sb -> %a : memref<4x32xf32, "sram">, memref<32xf32, "sram"> -> memref<4x32xf32, "sram">
        %n = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        scf.yield %n, %wb : !npu_dma.token, !npu_dma.token
      }
      npu_dma.wait %r
      npu_dma.wait %rb
      npu_compute.eltwise relu %a -> %a : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      npu_compute.eltwise add %a, %sb -> %a : memref<4x32xf32, "sram">, memref<32xf32, "sram"> -> memref<4x32xf32, "sram">
    }
    npu_task.task "twice" attributes {core = 1 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      scf.for %i = %lo to %hi step %c1 {
        npu_compute.eltwise relu %a -> %a : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      }
    }
    func.return
  }
}
// CHECK:      npu_task.task "never"
// CHECK:      %[[T0:.*]] = npu_dma.copy
// CHECK:      %[[B0:.*]] = npu_dma.copy
// CHECK-NOT:  scf.for
// CHECK:      npu_dma.wait %[[T0]]
// CHECK-NEXT: npu_compute.eltwise relu
// CHECK-NEXT: npu_dma.wait %[[B0]]
// CHECK-NEXT: npu_compute.eltwise add
// CHECK:      npu_task.task "twice"
// CHECK:      scf.for
