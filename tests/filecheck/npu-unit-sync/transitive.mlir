// A fence orders more than the accesses it names: a unit runs its queue in order,
// so a fence that waits for a unit's op (exact bytes on both sides: an sram buffer,
// not a select) waits for every op that unit issued before it, and for every access
// already ordered before that op's start. Here the store's fence `vector -> dma` on
// %o waits for the relu, which started after the matmul (fence `cube -> vector`):
// the matmul's read of %w is over by then, so the load into %w after the store needs
// no fence `cube -> dma` of its own. The simulator runs it without a race.
// RUN: %opt %s -p npu-unit-sync | filecheck %s
// RUN: %opt %s -p npu-unit-sync -o %t.mlir && npu-run %t.mlir 2>&1 | filecheck %s --check-prefix=SIM

// CHECK-LABEL: npu_task.task "chain"
// CHECK:       npu_compute.matmul %[[W:[^ ,]*]], %{{.*}} -> %[[ACC:[^ ]*]]
// CHECK-NEXT:  npu_compute.fence cube -> vector on %[[ACC]]
// CHECK-NEXT:  npu_compute.eltwise relu %[[ACC]] -> %[[O:[^ ]*]]
// CHECK-NEXT:  npu_compute.fence vector -> dma on %[[O]]
// CHECK-NEXT:  npu_dma.copy %[[O]]
// CHECK-NOT:   npu_compute.fence
// CHECK:       npu_dma.copy %{{.*}} -> %[[W]]

// SIM:     cycles:
// SIM-NOT: race
// SIM-NOT: warning

builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%w: memref<64x64xf32, "dram">, %y: memref<64x64xf32, "dram">) attributes {npu.inputs = ["w"], npu.outputs = ["y"]} {
    npu_task.task "chain" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %ws = npu_task.sram {offset = 0 : i64} : memref<64x64xf32, "sram">
      %acc = npu_task.sram {offset = 16384 : i64} : memref<64x64xf32, "sram">
      %o = npu_task.sram {offset = 32768 : i64} : memref<64x64xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %ws[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "dram"> -> memref<64x64xf32, "sram">
      npu_dma.wait %tw
      npu_compute.matmul %ws, %ws -> %acc : memref<64x64xf32, "sram">, memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      npu_compute.eltwise relu %acc -> %o : memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      %ts = npu_dma.copy %o[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "sram"> -> memref<64x64xf32, "dram">
      %tl = npu_dma.copy %w[%c0, %c0] -> %ws[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "dram"> -> memref<64x64xf32, "sram">
      npu_dma.wait %ts
      npu_dma.wait %tl
    }
    func.return
  }
}
