// RUN: %opt %s -p npu-dma-order | filecheck %s
// RUN: npu-run %s --timing-only | filecheck %s --check-prefix=BEFORE
// RUN: npu-opt %s -p npu-dma-order -o %t.mlir && npu-run %t.mlir --timing-only | filecheck %s --check-prefix=AFTER

// Loads issued in program order and all waited before the first op: the bias, then the
// weights (48 KiB), then the input. The pass issues them in order of first use (input,
// weights, bias), the third only once a channel is free (the input has landed: with
// two channels, issuing it earlier would stall the core), and waits for each just before
// its first reader: the relu and gelu of the input run while the weights stream in
// (1035 -> 971 cycles).
builtin.module {
  func.func @main(%x: memref<16x128xf32, "dram">, %w: memref<96x128xf32, "dram">, %b: memref<96xf32, "dram">, %y: memref<16x96xf32, "dram">) attributes {npu.inputs = ["x", "w", "b"], npu.outputs = ["y"]} {
    npu_task.task "fc" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sb = npu_task.sram {offset = 0 : i64} : memref<96xf32, "sram">
      %sw = npu_task.sram {offset = 512 : i64} : memref<96x128xf32, "sram">
      %sx = npu_task.sram {offset = 49664 : i64} : memref<16x128xf32, "sram">
      %sr = npu_task.sram {offset = 57856 : i64} : memref<16x128xf32, "sram">
      %sy = npu_task.sram {offset = 66048 : i64} : memref<16x96xf32, "sram">
      %tb = npu_dma.copy %b[%c0] -> %sb[%c0] {sizes = array<i64: 96>} : memref<96xf32, "dram"> -> memref<96xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 96, 128>} : memref<96x128xf32, "dram"> -> memref<96x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tb
      npu_dma.wait %tw
      npu_dma.wait %tx
      npu_compute.eltwise relu %sx -> %sr : memref<16x128xf32, "sram"> -> memref<16x128xf32, "sram">
      npu_compute.eltwise gelu %sr -> %sr : memref<16x128xf32, "sram"> -> memref<16x128xf32, "sram">
      npu_compute.matmul %sr, %sw -> %sy {trans_b} : memref<16x128xf32, "sram">, memref<96x128xf32, "sram"> -> memref<16x96xf32, "sram">
      npu_compute.eltwise add %sy, %sb -> %sy : memref<16x96xf32, "sram">, memref<96xf32, "sram"> -> memref<16x96xf32, "sram">
      %ts = npu_dma.copy %sy[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 16, 96>} : memref<16x96xf32, "sram"> -> memref<16x96xf32, "dram">
      npu_dma.wait %ts
    }
    func.return
  }
}
// CHECK:      %[[SB:.*]] = npu_task.sram {offset = 0 : i64}
// CHECK:      %[[SW:.*]] = npu_task.sram {offset = 512 : i64}
// CHECK:      %[[SX:.*]] = npu_task.sram {offset = 49664 : i64}
// CHECK:      %[[TX:.*]] = npu_dma.copy %{{.*}} -> %[[SX]]
// CHECK-NEXT: %[[TW:.*]] = npu_dma.copy %{{.*}} -> %[[SW]]
// CHECK:      npu_dma.wait %[[TX]]
// CHECK-NEXT: %[[TB:.*]] = npu_dma.copy %{{.*}} -> %[[SB]]
// CHECK-NEXT: npu_compute.eltwise relu %[[SX]]
// CHECK-NEXT: npu_compute.eltwise gelu
// CHECK-NEXT: npu_dma.wait %[[TW]]
// CHECK-NEXT: npu_compute.matmul
// CHECK-NEXT: npu_dma.wait %[[TB]]
// CHECK-NEXT: npu_compute.eltwise add

// BEFORE: cycles: 1035
// AFTER:  cycles: 971
