// RUN: %opt %s --split-input-file -p npu-task-canonicalize | filecheck %s

// A second wait on a token already waited earlier in the block goes; so does one in
// a loop body when the token was waited before the loop.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">) {
    npu_task.task "twice" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %t = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %t
      npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      npu_dma.wait %t
      scf.for %i = %lo to %hi step %c1 {
        npu_dma.wait %t
        npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      }
    }
    func.return
  }
}
// CHECK:      %[[T:.*]] = npu_dma.copy
// CHECK-NEXT: npu_dma.wait %[[T]]
// CHECK-NEXT: npu_compute.eltwise
// CHECK-NEXT: scf.for
// CHECK-NEXT:   npu_compute.eltwise
// CHECK-NOT:  npu_dma.wait

// -----

// Must not fire: the earlier wait is in a branch (not on every path), or in a loop
// body (the loop may not run), or on another token; in a loop, a wait on a token the
// loop carries is this iteration's token, waited once.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %c: i1) {
    npu_task.task "paths" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %b = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %t = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %u = npu_dma.copy %x[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      scf.if %c {
        npu_dma.wait %t
      }
      npu_dma.wait %u
      npu_dma.wait %t
      %v = npu_dma.copy %x[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %r = scf.for %i = %lo to %hi step %c1 iter_args(%w = %v) -> (!npu_dma.token) {
        npu_dma.wait %w
        %n = npu_dma.copy %x[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        scf.yield %n : !npu_dma.token
      }
      npu_dma.wait %r
    }
    func.return
  }
}
// CHECK:      scf.if
// CHECK-NEXT:   npu_dma.wait %t
// CHECK-NEXT: }
// CHECK-NEXT: npu_dma.wait %u
// CHECK-NEXT: npu_dma.wait %t
// CHECK:      scf.for
// CHECK-NEXT:   npu_dma.wait %w
// CHECK:      npu_dma.wait %r
