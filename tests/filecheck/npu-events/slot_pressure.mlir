// RUN: %opt %s --split-input-file -p npu-events | filecheck %s

// With one slot, "r"'s event cannot reuse slot 0: "r" may start before "q"
// consumes "p"'s signal, so the reuse would let "r" steal it. Instead of failing,
// npu-events moves "r" onto its producer's core, where queue order suffices.
builtin.module attributes {npu.arch = #npu.arch<event_slots = 1>} {
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
    func.return
  }
}
// CHECK: npu_task.task "p" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>}
// CHECK: npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>}
// CHECK: npu_task.task "r" attributes {core = 1 : i64, range = array<i64: 0, 1>}

// -----

// A random task graph (tests/test_planning_random.py, seed 0) on 3 cores whose
// cross-core dependencies need more than one live event even after moving tasks
// onto a producer's core: the allocation folds cores together (queues merged in
// program order) until one slot suffices - here down to one core, no events.
builtin.module attributes {npu.arch = #npu.arch<cores = 3, event_slots = 1>} {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">) attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %b0 = npu_task.alloc : memref<64xf32, "dram">
    %b1 = npu_task.alloc : memref<64xf32, "dram">
    %b2 = npu_task.alloc : memref<64xf32, "dram">
    %b3 = npu_task.alloc : memref<64xf32, "dram">
    %b4 = npu_task.alloc : memref<64xf32, "dram">
    %b5 = npu_task.alloc : memref<64xf32, "dram">
    npu_task.task "k0" attributes {core = 2 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %x[%c0] -> %b0[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "k1" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b0[%c0] -> %b1[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "k2" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b0[%c0] -> %b2[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "k3" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b0[%c0] -> %b3[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
    }
    npu_task.task "k4" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b1[%c0] -> %b4[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %b3[%c0] -> %b4[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t1
    }
    npu_task.task "k5" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b2[%c0] -> %b5[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %b3[%c0] -> %b5[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t1
    }
    npu_task.task "k6" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t0 = npu_dma.copy %b1[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %b4[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t1
    }
    func.return
  }
}
// CHECK:     npu_task.task "k0" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
// CHECK-NOT: core = 1
// CHECK-NOT: core = 2
// CHECK-NOT: waits
// CHECK:     npu_task.task "k6" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
