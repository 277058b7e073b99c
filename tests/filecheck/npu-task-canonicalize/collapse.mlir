// RUN: %opt %s --split-input-file -p npu-task-canonicalize | filecheck %s
// RUN: %opt %s --split-input-file -p 'npu-task-canonicalize{disable=collapse-invariant-slots}' | filecheck %s --check-prefix=OFF

// A double-buffered gemm (npu-bufferize's form) with m and k grids 1, four weight
// tiles: the activation window is the same every step, yet each step loads it into
// the other slot. It
// keeps the prologue's slot %a0: the selects of %a0/%a1 become %a0, the in-loop load
// goes, the loop carries the prologue's token (waited in the loop: the first step
// finds it landing, later ones done) and %a1 is dead. The weights still alternate.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %w: memref<64x32xf32, "dram">, %y: memref<4x64xf32, "dram">) {
    npu_task.task "fc" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c2 = arith.constant 2 : index
      %c16 = arith.constant 16 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a0 = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %b0 = npu_task.sram {offset = 512 : i64} : memref<16x32xf32, "sram">
      %a1 = npu_task.sram {offset = 2560 : i64} : memref<4x32xf32, "sram">
      %b1 = npu_task.sram {offset = 3072 : i64} : memref<16x32xf32, "sram">
      %acc = npu_task.sram {offset = 5120 : i64} : memref<4x16xf32, "sram">
      %ta0 = npu_dma.copy %x[%c0, %c0] -> %a0[%c0, %c0] {sizes = array<i64: 4, 32>, pad_value = 0.000000e+00 : f32} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %n0 = arith.muli %lo, %c16 : index
      %tb0 = npu_dma.copy %w[%n0, %c0] -> %b0[%c0, %c0] {sizes = array<i64: 16, 32>, pad_value = 0.000000e+00 : f32} : memref<64x32xf32, "dram"> -> memref<16x32xf32, "sram">
      %last = arith.subi %hi, %c1 : index
      %ra, %rb = scf.for %t = %lo to %last step %c1 iter_args(%ta = %ta0, %tb = %tb0) -> (!npu_dma.token, !npu_dma.token) {
        %rel = arith.subi %t, %lo : index
        %par = arith.remui %rel, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %acur = arith.select %odd, %a1, %a0 : memref<4x32xf32, "sram">
        %bcur = arith.select %odd, %b1, %b0 : memref<16x32xf32, "sram">
        %anxt = arith.select %odd, %a0, %a1 : memref<4x32xf32, "sram">
        %bnxt = arith.select %odd, %b0, %b1 : memref<16x32xf32, "sram">
        %t1 = arith.addi %t, %c1 : index
        %tan = npu_dma.copy %x[%c0, %c0] -> %anxt[%c0, %c0] {sizes = array<i64: 4, 32>, pad_value = 0.000000e+00 : f32} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        %n1 = arith.muli %t1, %c16 : index
        %tbn = npu_dma.copy %w[%n1, %c0] -> %bnxt[%c0, %c0] {sizes = array<i64: 16, 32>, pad_value = 0.000000e+00 : f32} : memref<64x32xf32, "dram"> -> memref<16x32xf32, "sram">
        npu_dma.wait %ta
        npu_dma.wait %tb
        npu_compute.matmul %acur, %bcur -> %acc {trans_b} : memref<4x32xf32, "sram">, memref<16x32xf32, "sram"> -> memref<4x16xf32, "sram">
        %n = arith.muli %t, %c16 : index
        %ts = npu_dma.copy %acc[%c0, %c0] -> %y[%c0, %n] {sizes = array<i64: 4, 16>, clip} : memref<4x16xf32, "sram"> -> memref<4x64xf32, "dram">
        npu_dma.wait %ts
        scf.yield %tan, %tbn : !npu_dma.token, !npu_dma.token
      }
      %rel2 = arith.subi %last, %lo : index
      %par2 = arith.remui %rel2, %c2 : index
      %odd2 = arith.cmpi eq, %par2, %c1 : index
      %alast = arith.select %odd2, %a1, %a0 : memref<4x32xf32, "sram">
      %blast = arith.select %odd2, %b1, %b0 : memref<16x32xf32, "sram">
      npu_dma.wait %ra
      npu_dma.wait %rb
      npu_compute.matmul %alast, %blast -> %acc {trans_b} : memref<4x32xf32, "sram">, memref<16x32xf32, "sram"> -> memref<4x16xf32, "sram">
      %nl = arith.muli %last, %c16 : index
      %tl = npu_dma.copy %acc[%c0, %c0] -> %y[%c0, %nl] {sizes = array<i64: 4, 16>, clip} : memref<4x16xf32, "sram"> -> memref<4x64xf32, "dram">
      npu_dma.wait %tl
    }
    func.return
  }
}
// CHECK:      %[[A0:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
// CHECK-NEXT: %[[B0:.*]] = npu_task.sram {offset = 512 : i64} : memref<16x32xf32, "sram">
// CHECK-NEXT: %[[B1:.*]] = npu_task.sram {offset = 3072 : i64} : memref<16x32xf32, "sram">
// CHECK-NEXT: %[[ACC:.*]] = npu_task.sram {offset = 5120 : i64}
// CHECK-NEXT: %[[TA0:.*]] = npu_dma.copy %{{.*}} -> %[[A0]]
// CHECK:      %[[RB:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[TB:.*]] = %{{.*}}) -> (!npu_dma.token) {
// CHECK-NOT:    npu_dma.copy %{{.*}} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
// CHECK:        %[[BCUR:.*]] = arith.select %{{.*}}, %[[B1]], %[[B0]]
// CHECK:        npu_dma.copy %{{.*}} : memref<64x32xf32, "dram"> -> memref<16x32xf32, "sram">
// CHECK:        npu_dma.wait %[[TA0]]
// CHECK-NEXT:   npu_dma.wait %[[TB]]
// CHECK-NEXT:   npu_compute.matmul %[[A0]], %[[BCUR]] -> %[[ACC]]
// CHECK:        scf.yield %{{.*}} : !npu_dma.token
// CHECK:      npu_dma.wait %[[TA0]]
// CHECK-NEXT: npu_dma.wait %[[RB]]
// CHECK-NEXT: npu_compute.matmul %[[A0]], %{{.*}} -> %[[ACC]]

// OFF:        scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (!npu_dma.token, !npu_dma.token)
// OFF:          npu_dma.copy %{{.*}} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">

// -----

// The weights stay and the input rows move (a conv or gemm whose output channels
// fit one tile): the weights keep one slot, the input still alternates.
builtin.module {
  func.func @main(%x: memref<16x32xf32, "dram">, %w: memref<16x32xf32, "dram">, %y: memref<16x16xf32, "dram">) {
    npu_task.task "fc" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a0 = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %b0 = npu_task.sram {offset = 512 : i64} : memref<16x32xf32, "sram">
      %a1 = npu_task.sram {offset = 2560 : i64} : memref<4x32xf32, "sram">
      %b1 = npu_task.sram {offset = 3072 : i64} : memref<16x32xf32, "sram">
      %acc = npu_task.sram {offset = 5120 : i64} : memref<4x16xf32, "sram">
      %r0 = arith.muli %lo, %c4 : index
      %ta0 = npu_dma.copy %x[%r0, %c0] -> %a0[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<16x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %tb0 = npu_dma.copy %w[%c0, %c0] -> %b0[%c0, %c0] {sizes = array<i64: 16, 32>} : memref<16x32xf32, "dram"> -> memref<16x32xf32, "sram">
      %last = arith.subi %hi, %c1 : index
      %ra, %rb = scf.for %t = %lo to %last step %c1 iter_args(%ta = %ta0, %tb = %tb0) -> (!npu_dma.token, !npu_dma.token) {
        %rel = arith.subi %t, %lo : index
        %par = arith.remui %rel, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %acur = arith.select %odd, %a1, %a0 : memref<4x32xf32, "sram">
        %bcur = arith.select %odd, %b1, %b0 : memref<16x32xf32, "sram">
        %anxt = arith.select %odd, %a0, %a1 : memref<4x32xf32, "sram">
        %bnxt = arith.select %odd, %b0, %b1 : memref<16x32xf32, "sram">
        %t1 = arith.addi %t, %c1 : index
        %r1 = arith.muli %t1, %c4 : index
        %tan = npu_dma.copy %x[%r1, %c0] -> %anxt[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<16x32xf32, "dram"> -> memref<4x32xf32, "sram">
        %tbn = npu_dma.copy %w[%c0, %c0] -> %bnxt[%c0, %c0] {sizes = array<i64: 16, 32>} : memref<16x32xf32, "dram"> -> memref<16x32xf32, "sram">
        npu_dma.wait %ta
        npu_dma.wait %tb
        npu_compute.matmul %acur, %bcur -> %acc {trans_b} : memref<4x32xf32, "sram">, memref<16x32xf32, "sram"> -> memref<4x16xf32, "sram">
        %r = arith.muli %t, %c4 : index
        %ts = npu_dma.copy %acc[%c0, %c0] -> %y[%r, %c0] {sizes = array<i64: 4, 16>} : memref<4x16xf32, "sram"> -> memref<16x16xf32, "dram">
        npu_dma.wait %ts
        scf.yield %tan, %tbn : !npu_dma.token, !npu_dma.token
      }
      %rel2 = arith.subi %last, %lo : index
      %par2 = arith.remui %rel2, %c2 : index
      %odd2 = arith.cmpi eq, %par2, %c1 : index
      %alast = arith.select %odd2, %a1, %a0 : memref<4x32xf32, "sram">
      %blast = arith.select %odd2, %b1, %b0 : memref<16x32xf32, "sram">
      npu_dma.wait %ra
      npu_dma.wait %rb
      npu_compute.matmul %alast, %blast -> %acc {trans_b} : memref<4x32xf32, "sram">, memref<16x32xf32, "sram"> -> memref<4x16xf32, "sram">
      %rl = arith.muli %last, %c4 : index
      %tl = npu_dma.copy %acc[%c0, %c0] -> %y[%rl, %c0] {sizes = array<i64: 4, 16>} : memref<4x16xf32, "sram"> -> memref<16x16xf32, "dram">
      npu_dma.wait %tl
    }
    func.return
  }
}
// CHECK:      %[[A0:.*]] = npu_task.sram {offset = 0 : i64}
// CHECK-NEXT: %[[B0:.*]] = npu_task.sram {offset = 512 : i64}
// CHECK-NEXT: %[[A1:.*]] = npu_task.sram {offset = 2560 : i64}
// CHECK-NEXT: %[[ACC:.*]] = npu_task.sram {offset = 5120 : i64}
// CHECK:      %[[TB0:.*]] = npu_dma.copy %{{.*}} -> %[[B0]]
// CHECK:      scf.for %{{.*}} iter_args(%[[TA:.*]] = %{{.*}}) -> (!npu_dma.token) {
// CHECK:        %[[ACUR:.*]] = arith.select %{{.*}}, %[[A1]], %[[A0]]
// CHECK:        npu_dma.copy %{{.*}} : memref<16x32xf32, "dram"> -> memref<4x32xf32, "sram">
// CHECK-NOT:    npu_dma.copy %{{.*}} : memref<16x32xf32, "dram"> -> memref<16x32xf32, "sram">
// CHECK:        npu_dma.wait %[[TA]]
// CHECK-NEXT:   npu_dma.wait %[[TB0]]
// CHECK-NEXT:   npu_compute.matmul %[[ACUR]], %[[B0]] -> %[[ACC]]

// -----

// Must not fire: the loop runs once for the task's range [0, 2) (one step in the
// loop, one peeled): the one load it would save is not worth letting the weights'
// prefetch start earlier (see `reloads`).
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">, %w: memref<32x32xf32, "dram">) {
    npu_task.task "once" attributes {core = 0 : i64, range = array<i64: 0, 2>} {
    ^bb0(%lo: index, %hi: index):
      %c2 = arith.constant 2 : index
      %c16 = arith.constant 16 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a0 = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %b0 = npu_task.sram {offset = 512 : i64} : memref<16x32xf32, "sram">
      %a1 = npu_task.sram {offset = 2560 : i64} : memref<4x32xf32, "sram">
      %b1 = npu_task.sram {offset = 3072 : i64} : memref<16x32xf32, "sram">
      %acc = npu_task.sram {offset = 5120 : i64} : memref<4x16xf32, "sram">
      %ta0 = npu_dma.copy %x[%c0, %c0] -> %a0[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %n0 = arith.muli %lo, %c16 : index
      %tb0 = npu_dma.copy %w[%n0, %c0] -> %b0[%c0, %c0] {sizes = array<i64: 16, 32>} : memref<32x32xf32, "dram"> -> memref<16x32xf32, "sram">
      %last = arith.subi %hi, %c1 : index
      %ra, %rb = scf.for %t = %lo to %last step %c1 iter_args(%ta = %ta0, %tb = %tb0) -> (!npu_dma.token, !npu_dma.token) {
        %rel = arith.subi %t, %lo : index
        %par = arith.remui %rel, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %acur = arith.select %odd, %a1, %a0 : memref<4x32xf32, "sram">
        %bcur = arith.select %odd, %b1, %b0 : memref<16x32xf32, "sram">
        %anxt = arith.select %odd, %a0, %a1 : memref<4x32xf32, "sram">
        %bnxt = arith.select %odd, %b0, %b1 : memref<16x32xf32, "sram">
        %t1 = arith.addi %t, %c1 : index
        %tan = npu_dma.copy %x[%c0, %c0] -> %anxt[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        %n1 = arith.muli %t1, %c16 : index
        %tbn = npu_dma.copy %w[%n1, %c0] -> %bnxt[%c0, %c0] {sizes = array<i64: 16, 32>} : memref<32x32xf32, "dram"> -> memref<16x32xf32, "sram">
        npu_dma.wait %ta
        npu_dma.wait %tb
        npu_compute.matmul %acur, %bcur -> %acc {trans_b} : memref<4x32xf32, "sram">, memref<16x32xf32, "sram"> -> memref<4x16xf32, "sram">
        scf.yield %tan, %tbn : !npu_dma.token, !npu_dma.token
      }
      npu_dma.wait %ra
      npu_dma.wait %rb
    }
    func.return
  }
}
// CHECK:      scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (!npu_dma.token, !npu_dma.token) {
// CHECK:        npu_dma.copy %x[%c0, %c0] -> %anxt

// -----

// Must not fire: the activation window moves (its row offset comes from the loop index).
builtin.module {
  func.func @main(%x: memref<16x32xf32, "dram">, %y: memref<16x32xf32, "dram">) {
    npu_task.task "rows" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a0 = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %a1 = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 1024 : i64} : memref<4x32xf32, "sram">
      %r0 = arith.muli %lo, %c4 : index
      %ta0 = npu_dma.copy %x[%r0, %c0] -> %a0[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<16x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %last = arith.subi %hi, %c1 : index
      %ra = scf.for %t = %lo to %last step %c1 iter_args(%ta = %ta0) -> (!npu_dma.token) {
        %rel = arith.subi %t, %lo : index
        %par = arith.remui %rel, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %acur = arith.select %odd, %a1, %a0 : memref<4x32xf32, "sram">
        %anxt = arith.select %odd, %a0, %a1 : memref<4x32xf32, "sram">
        %t1 = arith.addi %t, %c1 : index
        %r1 = arith.muli %t1, %c4 : index
        %tan = npu_dma.copy %x[%r1, %c0] -> %anxt[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<16x32xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %ta
        npu_compute.eltwise relu %acur -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        scf.yield %tan : !npu_dma.token
      }
      npu_dma.wait %ra
    }
    func.return
  }
}
// CHECK:      scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (!npu_dma.token) {
// CHECK:        %anxt = arith.select %odd, %a0, %a1
// CHECK:        npu_dma.copy %{{.*}} -> %anxt

// -----

// Must not fire: a conv prologue op rewrites the current slot in place every step.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">) {
    npu_task.task "prologue" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c2 = arith.constant 2 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a0 = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %a1 = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 1024 : i64} : memref<4x32xf32, "sram">
      %ta0 = npu_dma.copy %x[%c0, %c0] -> %a0[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %last = arith.subi %hi, %c1 : index
      %ra = scf.for %t = %lo to %last step %c1 iter_args(%ta = %ta0) -> (!npu_dma.token) {
        %rel = arith.subi %t, %lo : index
        %par = arith.remui %rel, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %acur = arith.select %odd, %a1, %a0 : memref<4x32xf32, "sram">
        %anxt = arith.select %odd, %a0, %a1 : memref<4x32xf32, "sram">
        %tan = npu_dma.copy %x[%c0, %c0] -> %anxt[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %ta
        npu_compute.eltwise relu %acur -> %acur : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        npu_compute.eltwise relu %acur -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        scf.yield %tan : !npu_dma.token
      }
      npu_dma.wait %ra
    }
    func.return
  }
}
// CHECK:      scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (!npu_dma.token) {
// CHECK:        %anxt = arith.select %odd, %a0, %a1
// CHECK:        npu_dma.copy %{{.*}} -> %anxt

// -----

// Must not fire: the task's output takes the source's bytes in place (`reuse`), so
// the source changes while the loop runs.
builtin.module {
  func.func @main(%x: memref<4x32xf32, "dram">) {
    %in = npu_task.alloc : memref<4x32xf32, "dram">
    %out = npu_task.alloc reuse(%in : memref<4x32xf32, "dram">) : memref<4x32xf32, "dram">
    npu_task.task "inplace" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c2 = arith.constant 2 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %a0 = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %a1 = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 1024 : i64} : memref<4x32xf32, "sram">
      %ta0 = npu_dma.copy %in[%c0, %c0] -> %a0[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
      %last = arith.subi %hi, %c1 : index
      %ra = scf.for %t = %lo to %last step %c1 iter_args(%ta = %ta0) -> (!npu_dma.token) {
        %rel = arith.subi %t, %lo : index
        %par = arith.remui %rel, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %acur = arith.select %odd, %a1, %a0 : memref<4x32xf32, "sram">
        %anxt = arith.select %odd, %a0, %a1 : memref<4x32xf32, "sram">
        %tan = npu_dma.copy %in[%c0, %c0] -> %anxt[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %ta
        npu_compute.eltwise relu %acur -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        %ts = npu_dma.copy %acc[%c0, %c0] -> %out[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x32xf32, "sram"> -> memref<4x32xf32, "dram">
        npu_dma.wait %ts
        scf.yield %tan : !npu_dma.token
      }
      npu_dma.wait %ra
    }
    func.return
  }
}
// CHECK:      scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (!npu_dma.token) {
// CHECK:        %anxt = arith.select %odd, %a0, %a1
// CHECK:        npu_dma.copy %{{.*}} -> %anxt

// -----

// Must not fire: the prologue loaded another window than the loop does (here: other
// columns), so the first slot does not hold what later steps read.
builtin.module {
  func.func @main(%x: memref<4x64xf32, "dram">) {
    npu_task.task "shifted" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c2 = arith.constant 2 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %a0 = npu_task.sram {offset = 0 : i64} : memref<4x32xf32, "sram">
      %a1 = npu_task.sram {offset = 512 : i64} : memref<4x32xf32, "sram">
      %acc = npu_task.sram {offset = 1024 : i64} : memref<4x32xf32, "sram">
      %ta0 = npu_dma.copy %x[%c0, %c0] -> %a0[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x64xf32, "dram"> -> memref<4x32xf32, "sram">
      %last = arith.subi %hi, %c1 : index
      %ra = scf.for %t = %lo to %last step %c1 iter_args(%ta = %ta0) -> (!npu_dma.token) {
        %rel = arith.subi %t, %lo : index
        %par = arith.remui %rel, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %acur = arith.select %odd, %a1, %a0 : memref<4x32xf32, "sram">
        %anxt = arith.select %odd, %a0, %a1 : memref<4x32xf32, "sram">
        %tan = npu_dma.copy %x[%c0, %c32] -> %anxt[%c0, %c0] {sizes = array<i64: 4, 32>} : memref<4x64xf32, "dram"> -> memref<4x32xf32, "sram">
        npu_dma.wait %ta
        npu_compute.eltwise relu %acur -> %acc : memref<4x32xf32, "sram"> -> memref<4x32xf32, "sram">
        scf.yield %tan : !npu_dma.token
      }
      npu_dma.wait %ra
    }
    func.return
  }
}
// CHECK:      scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (!npu_dma.token) {
// CHECK:        %anxt = arith.select %odd, %a0, %a1
// CHECK:        npu_dma.copy %{{.*}} -> %anxt
