// RUN: %opt %s --split-input-file -p npu-memplan | filecheck %s

// A chain on one core: "a" is dead once "q" has run, so "c" reuses its bytes;
// "b" is live across both and gets its own. Arena = 2 buffers = the lower bound.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    %a = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc : memref<64xf32, "dram">
    %c = npu_task.alloc : memref<64xf32, "dram">
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
      %t0 = npu_dma.copy %b[%c0] -> %c[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
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
// CHECK: builtin.module attributes {npu.dram_weights_bytes = 0 : i64, npu.dram_arena_bytes = 512 : i64, npu.dram_lower_bound_bytes = 512 : i64}
// CHECK: %a = npu_task.alloc {offset = 0 : i64}
// CHECK: %b = npu_task.alloc {offset = 256 : i64}
// CHECK: %c = npu_task.alloc {offset = 0 : i64}

// -----

// The same chain with "r" on another core and no event between "q" and "r":
// nothing orders "q" (uses a) before "r" (uses c), so they must not share bytes.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    %a = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc : memref<64xf32, "dram">
    %c = npu_task.alloc : memref<64xf32, "dram">
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
    npu_task.task "r" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b[%c0] -> %c[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "s" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %c[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// The three pairwise conflict, so no plan beats 768 bytes: the lower bound says so
// although at most two are live at any point of program order.
// CHECK: npu.dram_arena_bytes = 768 : i64, npu.dram_lower_bound_bytes = 768 : i64
// CHECK: %a = npu_task.alloc {offset = 0 : i64}
// CHECK: %b = npu_task.alloc {offset = 256 : i64}
// CHECK: %c = npu_task.alloc {offset = 512 : i64}

// -----

// With an event "q" -> "r" the order is known again and "c" reuses "a"'s bytes.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    %a = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc : memref<64xf32, "dram">
    %c = npu_task.alloc : memref<64xf32, "dram">
    npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %a[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "q" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %b[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "r" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b[%c0] -> %c[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "s" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %c[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK: npu.dram_arena_bytes = 512 : i64
// CHECK: %c = npu_task.alloc {offset = 0 : i64}

// -----

// Weights get consecutive aligned addresses in their own region.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">) {
    %w1 = npu_task.weight "w1" : memref<10xf32, "dram">
    %w2 = npu_task.weight "w2" : memref<3xf32, "dram">
    func.return
  }
}
// CHECK: npu.dram_weights_bytes = 128 : i64
// CHECK: npu_task.weight "w1" {offset = 0 : i64}
// CHECK: npu_task.weight "w2" {offset = 64 : i64}
