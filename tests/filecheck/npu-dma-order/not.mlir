// RUN: %opt %s --split-input-file -p npu-dma-order | filecheck %s

// Must not move: the second load reuses the bytes the relu reads (its destination
// aliases %a), so it stays after the relu although its reader comes first; the
// relu's wait stays in front of the relu, and the second wait in front of the add
// (the add reads what the load writes).
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">) {
    npu_task.task "reuse" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %r = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %b = npu_task.sram {offset = 256 : i64} : memref<4x32xf32, "sram">
      %ta = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %ta
      npu_compute.eltwise relu %a -> %r : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      %tb = npu_dma.copy %x[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %tb
      npu_compute.eltwise add %r, %b -> %r : memref<4x32xf32, "sram">, memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
    }
    func.return
  }
}
// CHECK:      %[[TA:.*]] = npu_dma.copy
// CHECK:      npu_dma.wait %[[TA]]
// CHECK-NEXT: npu_compute.eltwise relu
// CHECK-NEXT: %[[TB:.*]] = npu_dma.copy
// CHECK-NEXT: npu_dma.wait %[[TB]]
// CHECK-NEXT: npu_compute.eltwise add

// -----

// Must not move: a load whose token a loop carries (the loop's first step waits for
// it) stays before the loop, its wait in the loop stays first in the body (the relu
// reads the slot), and the wait on the other load stays before the loop (the loop's
// relu writes its buffer).
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">) {
    npu_task.task "carried" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %b = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %t0 = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %u = npu_dma.copy %x[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %u
      %r = scf.for %i = %lo to %hi step %c1 iter_args(%w = %t0) -> (!npu_dma.token) {
        npu_dma.wait %w
        npu_compute.eltwise relu %a -> %b : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        %n = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        scf.yield %n : !npu_dma.token
      }
      npu_dma.wait %r
    }
    func.return
  }
}
// CHECK:      %[[T0:.*]] = npu_dma.copy
// CHECK-NEXT: %[[U:.*]] = npu_dma.copy
// CHECK-NEXT: npu_dma.wait %[[U]]
// CHECK-NEXT: %{{.*}} = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[W:.*]] = %[[T0]])
// CHECK-NEXT:   npu_dma.wait %[[W]]
// CHECK-NEXT:   npu_compute.eltwise relu

// -----

// Must not move: the load reads DRAM bytes a store writes, so it stays after the
// store's wait (before it the store may still be in flight), although its reader is
// the first op; the store's wait does not sink past the load (which reads what it
// writes).
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %y: memref<4x32xf32, "dram">) {
    npu_task.task "through-dram" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %b = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %c = npu_task.sram {offset = 1024 : i64} : memref<4x32xf32, "sram">
      %ts = npu_dma.copy %a[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "sram"> -> memref<4x32xf32, "dram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %c[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %ts
      %ty = npu_dma.copy %y[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %tx
      npu_dma.wait %ty
      npu_compute.eltwise relu %b -> %b : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      npu_compute.eltwise relu %c -> %c : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
    }
    func.return
  }
}
// CHECK:      %[[TS:.*]] = npu_dma.copy %{{.*}} -> %{{.*}} {sizes = array<i64: 4, 32>} : memref<4x32xf32, "sram"> -> memref<4x32xf32, "dram">
// CHECK:      npu_dma.wait %[[TS]]
// CHECK-NEXT: %[[TY:.*]] = npu_dma.copy
// CHECK-NEXT: npu_dma.wait %[[TY]]
// CHECK-NEXT: npu_compute.eltwise relu

// -----

// Must not reorder: loads already issued in order of first use, both in flight at
// once on the two channels (moving either gains nothing by the block's timing), keep
// their places; only the waits sink to their readers.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %w: memref<32x32xf32, "dram">) {
    npu_task.task "planned" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %sw = npu_task.sram {offset = 512 : i64} : memref<32x32xf32, "sram">
      %r = npu_task.sram {offset = 4608 : i64} : memref<4x32xf32, "sram">
      %ta = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 32, 32>} : memref<32x32xf32, "dram"> -> memref<32x32xf32, "sram">
      npu_dma.wait %ta
      npu_dma.wait %tw
      npu_compute.eltwise relu %a -> %a : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      npu_compute.matmul %a, %sw -> %r : memref<4x32xf32, "sram">, memref<32x32xf32, "sram"> -> memref<4x32xf32, "sram">
    }
    func.return
  }
}
// CHECK:      %[[TA:.*]] = npu_dma.copy
// CHECK-NEXT: %[[TW:.*]] = npu_dma.copy
// CHECK-NEXT: npu_dma.wait %[[TA]]
// CHECK-NEXT: npu_compute.eltwise relu
// CHECK-NEXT: npu_dma.wait %[[TW]]
// CHECK-NEXT: npu_compute.matmul

// -----

// Must not move: one load for the next step and a free channel at the top (the store
// is awaited in its own step): issuing it later would only make it land later.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: memref<256x64xf32, "dram">, %w: memref<320x64xf32, "dram">, %y: memref<1024x64xf32, "dram">) attributes {npu.inputs = ["x", "w"], npu.outputs = ["y"]} {
    npu_task.task "one_load" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %c256 = arith.constant 256 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<256x64xf32, "sram">
      %w0 = npu_task.sram {offset = 65536 : i64} : memref<64x64xf32, "sram">
      %w1 = npu_task.sram {offset = 81920 : i64} : memref<64x64xf32, "sram">
      %o = npu_task.sram {offset = 99328 : i64} : memref<256x64xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 256, 64>} : memref<256x64xf32, "dram"> -> memref<256x64xf32, "sram">
      %r0 = arith.muli %lo, %c64 : index
      %tw = npu_dma.copy %w[%r0, %c0] -> %w0[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<320x64xf32, "dram"> -> memref<64x64xf32, "sram">
      npu_dma.wait %tx
      %e = scf.for %t = %lo to %hi step %c1 iter_args(%pw = %tw) -> (!npu_dma.token) {
        %rel = arith.subi %t, %lo : index
        %par = arith.remui %rel, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %wc = arith.select %odd, %w1, %w0 : memref<64x64xf32, "sram">
        %wn = arith.select %odd, %w0, %w1 : memref<64x64xf32, "sram">
        %t1 = arith.addi %t, %c1 : index
        %r1 = arith.muli %t1, %c64 : index
        %nw = npu_dma.copy %w[%r1, %c0] -> %wn[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<320x64xf32, "dram"> -> memref<64x64xf32, "sram">
        npu_dma.wait %pw
        npu_compute.matmul %sx, %wc -> %o : memref<256x64xf32, "sram">, memref<64x64xf32, "sram"> -> memref<256x64xf32, "sram">
        %ro = arith.muli %t, %c256 : index
        %st = npu_dma.copy %o[%c0, %c0] -> %y[%ro, %c0] {sizes = array<i64: 256, 64>} : memref<256x64xf32, "sram"> -> memref<1024x64xf32, "dram">
        npu_dma.wait %st
        scf.yield %nw : !npu_dma.token
      }
      npu_dma.wait %e
    }
    func.return
  }
}
// CHECK-LABEL: npu_task.task "one_load"
// CHECK:       scf.for
// CHECK:         %[[NW:.*]] = npu_dma.copy
// CHECK-NEXT:    npu_dma.wait
// CHECK-NEXT:    npu_compute.matmul
