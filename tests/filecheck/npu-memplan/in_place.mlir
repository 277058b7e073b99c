// RUN: %opt %s --split-input-file -p npu-memplan | filecheck %s

// "q" reads %a only where it writes %b (reuse) and "p" (the other task touching %a)
// runs before it on the same core: %b takes %a's bytes.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    %a = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc reuse(%a : memref<64xf32, "dram">) : memref<64xf32, "dram">
    npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %a[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "q" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %b[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "r" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK: npu.dram_arena_bytes = 256 : i64, npu.dram_lower_bound_bytes = 256 : i64
// CHECK: %a = npu_task.alloc {offset = 0 : i64}
// CHECK: %b = npu_task.alloc reuse(%a : memref<64xf32, "dram">) {offset = 0 : i64}

// -----

// Must not fire: "p2" on core 1 also reads %a and nothing orders it before "q",
// so "q" overwriting %a could race with it. %b gets its own bytes.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    %a = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc reuse(%a : memref<64xf32, "dram">) : memref<64xf32, "dram">
    npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %a[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "p2" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "q" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %b[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "r" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK: npu.dram_arena_bytes = 512 : i64, npu.dram_lower_bound_bytes = 512 : i64
// CHECK: %a = npu_task.alloc {offset = 0 : i64}
// CHECK: %b = npu_task.alloc reuse(%a : memref<64xf32, "dram">) {offset = 256 : i64}

// -----

// Must not fire through a view: "r" reads %a through the reshape %v after "q" wrote
// %b, so %b taking %a's bytes would destroy %a while it still has a reader (issue 13:
// a view and its base are one buffer whose lifetime is the union of their uses).
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">, %z: memref<8x8xf32, "dram">) {
    %a = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc reuse(%a : memref<64xf32, "dram">) : memref<64xf32, "dram">
    %v = npu_task.view %a : memref<64xf32, "dram"> to memref<8x8xf32, "dram">
    npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %a[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "q" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %b[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "r" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %v[%c0, %c0] -> %z[%c0, %c0] {sizes = array<i64: 8, 8>} : memref<8x8xf32, "dram"> -> memref<8x8xf32, "dram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %b[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t1
    }
    func.return
  }
}
// CHECK: npu.dram_arena_bytes = 512 : i64, npu.dram_lower_bound_bytes = 512 : i64
// CHECK: %a = npu_task.alloc {offset = 0 : i64}
// CHECK: %b = npu_task.alloc reuse(%a : memref<64xf32, "dram">) {offset = 256 : i64}

// -----

// Must not fire for %b: two in-place candidates in a chain. "q" writes %b reading %a
// (reuse), but "r" reads %a too, after "q" (a GELU's 0.5 * x and its chain reading x).
// "r" counts as writing %b only because %c is its in-place candidate; that must not
// hide its read of %a. %b gets its own bytes; %c may still take %b's (only "r" reads
// %b, where it writes %c).
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    %a = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc reuse(%a : memref<64xf32, "dram">) : memref<64xf32, "dram">
    %c = npu_task.alloc reuse(%b : memref<64xf32, "dram">) : memref<64xf32, "dram">
    npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %a[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "q" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %b[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "r" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %s = npu_task.sram {offset = 0 : i64} : memref<64xf32, "sram">
      %t0 = npu_dma.copy %a[%c0] -> %s[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "sram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %b[%c0] -> %c[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t1
    }
    npu_task.task "s" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %c[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK: npu.dram_arena_bytes = 512 : i64
// CHECK: %a = npu_task.alloc {offset = [[A:[0-9]+]] : i64}
// CHECK: %b = npu_task.alloc reuse(%a : memref<64xf32, "dram">) {offset = [[B:[0-9]+]] : i64}
// CHECK-NOT: offset = [[A]]
// CHECK: %c = npu_task.alloc reuse(%b : memref<64xf32, "dram">) {offset = [[B]] : i64}
