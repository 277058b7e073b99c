// RUN: %opt %s -p npu-dma-order | filecheck %s
// RUN: npu-opt %s -p npu-unit-sync -o %t.before.mlir && npu-run %t.before.mlir --timing-only | filecheck %s --check-prefix=BEFORE
// RUN: npu-opt %s -p npu-dma-order,npu-unit-sync -o %t.mlir && npu-run %t.mlir --timing-only | filecheck %s --check-prefix=AFTER

// Loads issued in program order and all waited before the first op: the second
// layer's weights (36 KiB), the first's (48 KiB), then the input, which waits for a
// free channel until a weight lands. The pass issues them in order of first use
// (input, first weights, second weights; the third once a channel is free, the input
// having landed: issuing it earlier would stall the core) and waits for each just
// before its first reader: the relu and gelu of the input run while the weights
// stream in (1444 -> 1224 cycles, with the fences npu-unit-sync adds for the concurrent units).
builtin.module {
  func.func @main(%x: memref<16x128xf32, "dram">, %w: memref<96x128xf32, "dram">, %v: memref<96x96xf32, "dram">, %y: memref<16x96xf32, "dram">) attributes {npu.inputs = ["x", "w", "v"], npu.outputs = ["y"]} {
    npu_task.task "mlp" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sv = npu_task.sram {offset = 0 : i64} : memref<96x96xf32, "sram">
      %sw = npu_task.sram {offset = 36864 : i64} : memref<96x128xf32, "sram">
      %sx = npu_task.sram {offset = 86016 : i64} : memref<16x128xf32, "sram">
      %sr = npu_task.sram {offset = 94208 : i64} : memref<16x128xf32, "sram">
      %sh = npu_task.sram {offset = 102400 : i64} : memref<16x96xf32, "sram">
      %sy = npu_task.sram {offset = 108544 : i64} : memref<16x96xf32, "sram">
      %tv = npu_dma.copy %v[%c0, %c0] -> %sv[%c0, %c0] {sizes = array<i64: 96, 96>} : memref<96x96xf32, "dram"> -> memref<96x96xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 96, 128>} : memref<96x128xf32, "dram"> -> memref<96x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tv
      npu_dma.wait %tw
      npu_dma.wait %tx
      npu_compute.eltwise relu %sx -> %sr : memref<16x128xf32, "sram"> -> memref<16x128xf32, "sram">
      npu_compute.eltwise gelu %sr -> %sr : memref<16x128xf32, "sram"> -> memref<16x128xf32, "sram">
      npu_compute.matmul %sr, %sw -> %sh {trans_b} : memref<16x128xf32, "sram">, memref<96x128xf32, "sram"> -> memref<16x96xf32, "sram">
      npu_compute.matmul %sh, %sv -> %sy : memref<16x96xf32, "sram">, memref<96x96xf32, "sram"> -> memref<16x96xf32, "sram">
      %ts = npu_dma.copy %sy[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 16, 96>} : memref<16x96xf32, "sram"> -> memref<16x96xf32, "dram">
      npu_dma.wait %ts
    }
    func.return
  }
}
// CHECK:      %[[SV:.*]] = npu_task.sram {offset = 0 : i64}
// CHECK:      %[[SW:.*]] = npu_task.sram {offset = 36864 : i64}
// CHECK:      %[[SX:.*]] = npu_task.sram {offset = 86016 : i64}
// CHECK:      %[[TX:.*]] = npu_dma.copy %{{.*}} -> %[[SX]]
// CHECK-NEXT: %[[TW:.*]] = npu_dma.copy %{{.*}} -> %[[SW]]
// CHECK:      npu_dma.wait %[[TX]]
// CHECK-NEXT: %[[TV:.*]] = npu_dma.copy %{{.*}} -> %[[SV]]
// CHECK-NEXT: npu_compute.eltwise relu %[[SX]]
// CHECK-NEXT: npu_compute.eltwise gelu
// CHECK-NEXT: npu_dma.wait %[[TW]]
// CHECK-NEXT: npu_compute.matmul
// CHECK-NEXT: npu_dma.wait %[[TV]]
// CHECK-NEXT: npu_compute.matmul

// BEFORE: cycles: 1444
// AFTER:  cycles: 1224
