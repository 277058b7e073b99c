// RUN: %opt %s -p npu-events | filecheck %s

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
