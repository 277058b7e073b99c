// RUN: %opt %s --split-input-file -p npu-task-canonicalize | filecheck %s

// A gemm without double buffering, m and k grids 1: the activation window does not
// move with the loop, so its load moves before the loop (once, not per weight tile).
// The loop runs from lo*2 to hi*2: at least once for any range (lo < hi), so the
// load is not new work, and four times for this range [0, 2), so three loads are
// saved. The wait stays in the loop: the first step waits for the load, later ones
// find it done. The weight window moves with %t: its load stays.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %w: memref<64x32xf32, "dram">, %y: memref<4x64xf32, "dram">) {
    npu_task.task "fc" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c16 = arith.constant 16 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %b = npu_task.sram {offset = 512 : i64} : memref<16x32xf32, "sram">
      %acc = npu_task.sram {offset = 2560 : i64} : memref<4x16xf32, "sram">
      %t0 = arith.muli %lo, %c2 : index
      %tend = arith.muli %hi, %c2 : index
      scf.for %t = %t0 to %tend step %c1 {
        %ta = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        %n = arith.muli %t, %c16 : index
        %tb = npu_dma.copy %w[%n, %c0] -> %b[%c0, %c0] {sizes = array<i64: 16, 32>} : memref<64x32xf32, "dram"> -> memref<16x32xf32, "sram">
        npu_dma.wait %ta
        npu_dma.wait %tb
        npu_compute.matmul %a, %b -> %acc {trans_b} : memref<4x32xf32, "sram">, memref<16x32xf32, "sram"> -> memref<4x16xf32, "sram">
        %ts = npu_dma.copy %acc[%c0, %c0] -> %y[%c0, %n] {sizes = array<i64: 4, 16>, clip} : memref<4x16xf32, "sram"> -> memref<4x64xf32, "dram">
        npu_dma.wait %ts
      }
    }
    func.return
  }
}
// CHECK:      %[[A:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
// CHECK:      %[[TA:.*]] = npu_dma.copy %{{.*}}[%{{.*}}, %{{.*}}] -> %[[A]]
// CHECK-NEXT: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:    -> %[[A]]
// CHECK:        npu_dma.copy %{{.*}}[%{{.*}}, %{{.*}}] -> %{{.*}}[%{{.*}}, %{{.*}}] {sizes = array<i64: 16, 32>}
// CHECK:        npu_dma.wait %[[TA]]
// CHECK:        npu_compute.matmul %[[A]]

// -----

// Must not fire: an in-place prologue op rewrites the activation tile every step, so
// each step needs a fresh load.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %y: memref<4x32xf32, "dram">) {
    npu_task.task "act" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      scf.for %t = %lo to %hi step %c1 {
        %ta = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %ta
        npu_compute.eltwise relu %a -> %a : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        %ts = npu_dma.copy %a[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "sram"> -> memref<4x32xf32, "dram">
        npu_dma.wait %ts
      }
    }
    func.return
  }
}
// CHECK:      scf.for
// CHECK-NEXT:   npu_dma.copy %{{.*}} -> %{{.*}} {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">

// -----

// Must not fire: another buffer at overlapping SRAM bytes (offset 256 lies inside
// [0, 512)) is written in the loop.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %z: memref<64xf32, "dram">) {
    npu_task.task "alias" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %other = npu_task.sram {offset = 256 : i64} : memref<64xf32, "sram">
      %acc = npu_task.sram {offset = 1024 : i64} : memref<4x32xf32, "sram">
      scf.for %t = %lo to %hi step %c1 {
        %ta = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        %tz = npu_dma.copy %z[%c0] -> %other[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "sram">
        npu_dma.wait %ta
        npu_dma.wait %tz
        npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      }
    }
    func.return
  }
}
// CHECK:      scf.for
// CHECK-NEXT:   npu_dma.copy %{{.*}} -> %{{.*}} {sizes = array<i64: 4, 32>}
// CHECK-NEXT:   npu_dma.copy %{{.*}} -> %{{.*}} {sizes = array<i64: 64>}

// -----

// Must not fire: the window's offset depends on the loop index.
builtin.module {
  func.func @main(%x: memref<8x32xf32, "dram">, %y: memref<8x32xf32, "dram">) {
    npu_task.task "rows" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      scf.for %t = %lo to %hi step %c1 {
        %r = arith.muli %t, %c4 : index
        %ta = npu_dma.copy %x[%r, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<8x32xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %ta
        npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        %ts = npu_dma.copy %acc[%c0, %c0] -> %y[%r, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "sram"> -> memref<8x32xf32, "dram">
        npu_dma.wait %ts
      }
    }
    func.return
  }
}
// CHECK:      scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:   %[[R:.*]] = arith.muli %[[T]]
// CHECK-NEXT:   npu_dma.copy %{{.*}}[%[[R]], %{{.*}}] -> %{{.*}}[%{{.*}}, %{{.*}}] {sizes = array<i64: 4, 32>}

// -----

// Must not fire: the loop may not iterate (from 1 to hi, and hi may be 1), and
// hoisting would add a load; and in the second loop a wait comes first in the body.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %y: memref<4x32xf32, "dram">) {
    npu_task.task "maybe" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      scf.for %t = %c1 to %hi step %c1 {
        %ta = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %ta
        npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      }
      %ts = npu_dma.copy %acc[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "sram"> -> memref<4x32xf32, "dram">
      scf.for %t = %lo to %hi step %c1 {
        npu_dma.wait %ts
        %tb = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %tb
        npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      }
    }
    func.return
  }
}
// CHECK:      scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:   npu_dma.copy %{{.*}} -> %{{.*}} {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
// CHECK:      scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:   npu_dma.wait
// CHECK-NEXT:   npu_dma.copy %{{.*}} -> %{{.*}} {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">

// -----

// Must not fire: the loop writes the source's DRAM bytes (the output buffer takes the
// input's bytes in place, `reuse`), so a later step's load would read new data.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">) {
    %in = npu_task.alloc : memref<4x32xf32, "dram">
    %out = npu_task.alloc reuse(%in : memref<4x32xf32, "dram">) : memref<4x32xf32, "dram">
    npu_task.task "inplace" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      scf.for %t = %lo to %hi step %c1 {
        %ta = npu_dma.copy %in[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %ta
        npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        %ts = npu_dma.copy %acc[%c0, %c0] -> %out[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "sram"> -> memref<4x32xf32, "dram">
        npu_dma.wait %ts
      }
    }
    func.return
  }
}
// CHECK:      scf.for
// CHECK-NEXT:   npu_dma.copy %{{.*}} -> %{{.*}} {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">

// -----

// Must not fire: the loop runs once for the task's range [0, 1): no load to save.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">) {
    npu_task.task "single" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      scf.for %t = %lo to %hi step %c1 {
        %ta = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %ta
        npu_compute.eltwise relu %a -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
      }
    }
    func.return
  }
}
// CHECK:      scf.for
// CHECK-NEXT:   npu_dma.copy %{{.*}} -> %{{.*}} {sizes = array<i64: 4, 32>}
