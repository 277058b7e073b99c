// RUN: %opt %s --split-input-file -p npu-events | filecheck %s

// A producer on core 0 and its consumer on core 1: one event.
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
    npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK: npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>}
// CHECK: npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>}

// -----

// Producer and consumer on the same core: queue order suffices, no event.
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
      %t0 = npu_dma.copy %a[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK:     npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>}
// CHECK-NOT: waits
// CHECK:     npu_task.task "q" attributes {core = 0 : i64, range = array<i64: 0, 1>}

// -----

// "r" needs both "p" (core 0) and "q" (core 1). The event from "q" covers "p",
// which "q" already waited for, so "r" waits on one slot only.
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
    npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %b[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "r" attributes {core = 2 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %c[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %b[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t1
    }
    func.return
  }
}
// CHECK: npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>}
// CHECK: npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>, signals = array<i64: 1>}
// CHECK: npu_task.task "r" attributes {core = 2 : i64, range = array<i64: 0, 1>, waits = array<i64: 1>}

// -----

// Ping-pong between two cores with two slots: the third event reuses slot 0
// because its previous waiter ("q") has finished before both the new
// signaller ("r") and the new waiter ("s") start.
builtin.module attributes {npu.arch = #npu.arch<event_slots = 2>} {
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
    npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
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
    npu_task.task "s" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %c[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    func.return
  }
}
// CHECK: npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>}
// CHECK: npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>, signals = array<i64: 1>}
// CHECK: npu_task.task "r" attributes {core = 0 : i64, range = array<i64: 0, 1>, waits = array<i64: 1>, signals = array<i64: 0>}
// CHECK: npu_task.task "s" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>}

// -----

// "r" on core 2 needs "p" (core 0) and "q" (core 1), which are independent:
// both signal the same slot, a counting semaphore "r" waits on twice.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) {
    %a = npu_task.alloc : memref<64xf32, "dram">
    %b = npu_task.alloc : memref<64xf32, "dram">
    npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %a[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %b[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "r" attributes {core = 2 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %a[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %b[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t1
    }
    func.return
  }
}
// CHECK: npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>}
// CHECK: npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>}
// CHECK: npu_task.task "r" attributes {core = 2 : i64, range = array<i64: 0, 1>, waits = array<i64: 0, 0>}
