// RUN: %opt %s --split-input-file -p npu-schedule,npu-events | filecheck %s

// Parallel branches (Inception-like): "left" and "right" both read the stem's
// output and are independent, so they run on cores 0 and 1 at once. "right"
// starts a sync later (it waits for the stem's event), so "join" starts earliest
// after it on core 1 (queue order) and waits for "left" through one event.
builtin.module attributes {npu.arch = #npu.arch<cores = 2>} {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    %s = npu_task.alloc : memref<64xf32, "dram">
    %l = npu_task.alloc : memref<64xf32, "dram">
    %r = npu_task.alloc : memref<64xf32, "dram">
    npu_task.task "stem" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %s[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "left" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %s[%c0] -> %l[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "right" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %s[%c0] -> %r[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "join" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %l[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %r[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t1
    }
    func.return
  }
}
// CHECK:      npu_task.task "stem" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64, signals = array<i64: 0>}
// CHECK:      npu_task.task "left" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64, signals = array<i64: 1>}
// CHECK:      npu_task.task "right" attributes {core = 1 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64, waits = array<i64: 0>}
// CHECK:      npu_task.task "join" attributes {core = 1 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64, waits = array<i64: 1>}

// -----

// A residual block: "body" needs the stem, "add" needs both; nothing can run
// beside anything, and moving a task to core 1 would only add sync latency:
// everything stays on core 0 in queue order, with no event.
builtin.module attributes {npu.arch = #npu.arch<cores = 2>} {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    %s = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc : memref<64xf32, "dram">
    npu_task.task "stem" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %s[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "body" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %s[%c0] -> %b[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "add" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %s[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t1
    }
    func.return
  }
}
// CHECK:      npu_task.task "stem" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64}
// CHECK:      npu_task.task "body" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 5000 : i64}
// CHECK:      npu_task.task "add" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1000 : i64}
// CHECK-NOT:  waits
