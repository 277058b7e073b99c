// RUN: %opt %s -p npu-early-load | filecheck %s
// RUN: %opt %s -p 'npu-early-load{mirror=false}' | filecheck %s --check-prefix=KEEP
// RUN: %opt %s -p npu-early-load,npu-unit-sync -o %t.mlir && npu-run %t.mlir --sanitize | filecheck %s --check-prefix=SIM
// RUN: %opt %s -p 'npu-early-load{mirror=false},npu-unit-sync' -o %t.keep.mlir && npu-run %t.keep.mlir --sanitize | filecheck %s --check-prefix=SIM-KEEP
// RUN: npu-opt %s -p npu-unit-sync -o %t.off.mlir && npu-run %t.off.mlir --sanitize | filecheck %s --check-prefix=SIM-OFF

// Three tasks on core 0 (32 KiB SRAM, one vector lane: an eltwise op of 2048
// elements computes 2048 cycles, long enough to hide a 114-cycle load; a DMA latency
// of 50 cycles, so that 8 KiB loads are worth loading early: at least dram_bw x
// dma_latency = 6400 bytes). "b" loads its weight into bytes "a" never
// touches [8192, 16384): the load moves ahead of b's activation load and `early`
// counts it with the constant and the two buffers before it; "a" hands its core over
// (`handoff`) after its 4th op, the wait for its last DRAM load (what follows, the relu
// and the store, leaves the DMA channels and DRAM to the next task's early load). "c"'s weight buffer
// [0, 8192) is inside b's footprint [0, 16384); mirrored, c's buffers go to the top of
// SRAM in reverse order (its two clusters: the weight [0, 8192) to [24576, 32768), the
// input [8192, 16384) to [16384, 24576)), which frees the weight's bytes. With
// mirror=false c keeps its layout and loads nothing early. The run matches under the
// sanitizer (every read finds the value it names: no early load landed on a byte
// the task before it still used), and each early load runs during the previous
// task's compute: b's during a's relu, c's during b's add (64 cycles each, the
// second load's transfer the two channels no longer share).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768, vector_lanes = 1, dma_latency = 50>} {
  func.func @main(%x: memref<16x128xf32, "dram">, %y: memref<16x128xf32, "dram">) attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_task.weight "w" {value = dense<0.5> : tensor<16x128xf32>, offset = 0 : i64} : memref<16x128xf32, "dram">
    %v = npu_task.weight "v" {value = dense<2.0> : tensor<16x128xf32>, offset = 8192 : i64} : memref<16x128xf32, "dram">
    %h = npu_task.alloc {offset = 0 : i64} : memref<16x128xf32, "dram">
    %g = npu_task.alloc {offset = 8192 : i64} : memref<16x128xf32, "dram">
    npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tx
      npu_compute.eltwise relu %sx -> %sx : memref<16x128xf32, "sram"> -> memref<16x128xf32, "sram">
      %th = npu_dma.copy %sx[%c0, %c0] -> %h[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "sram"> -> memref<16x128xf32, "dram">
      npu_dma.wait %th
    }
    npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sh = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %th = npu_dma.copy %h[%c0, %c0] -> %sh[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      %sw = npu_task.sram {offset = 8192 : i64} : memref<16x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %th
      npu_dma.wait %tw
      npu_compute.eltwise add %sh, %sw -> %sh : memref<16x128xf32, "sram">, memref<16x128xf32, "sram"> -> memref<16x128xf32, "sram">
      %tg = npu_dma.copy %sh[%c0, %c0] -> %g[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "sram"> -> memref<16x128xf32, "dram">
      npu_dma.wait %tg
    }
    npu_task.task "c" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sv = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tv = npu_dma.copy %v[%c0, %c0] -> %sv[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      %sg = npu_task.sram {offset = 8192 : i64} : memref<16x128xf32, "sram">
      %tg = npu_dma.copy %g[%c0, %c0] -> %sg[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tv
      npu_dma.wait %tg
      npu_compute.eltwise mul %sg, %sv -> %sg : memref<16x128xf32, "sram">, memref<16x128xf32, "sram"> -> memref<16x128xf32, "sram">
      %ty = npu_dma.copy %sg[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "sram"> -> memref<16x128xf32, "dram">
      npu_dma.wait %ty
    }
    func.return
  }
}
// CHECK:      npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, handoff = 4 : i64} {
// CHECK:      npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, early = 4 : i64, handoff = 7 : i64} {
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   arith.constant 0 : index
// CHECK-NEXT:   %sh = npu_task.sram {offset = 0 : i64}
// CHECK-NEXT:   %sw = npu_task.sram {offset = 8192 : i64}
// CHECK-NEXT:   %tw = npu_dma.copy %w
// CHECK-NEXT:   %th{{.*}} = npu_dma.copy %h
// CHECK:      npu_task.task "c" attributes {core = 0 : i64, range = array<i64: 0, 1>, early = 4 : i64} {
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   arith.constant 0 : index
// CHECK-NEXT:   %sv = npu_task.sram {offset = 24576 : i64}
// CHECK-NEXT:   %sg{{.*}} = npu_task.sram {offset = 16384 : i64}
// CHECK-NEXT:   %tv = npu_dma.copy %v
// CHECK-NEXT:   %tg{{.*}} = npu_dma.copy %g

// KEEP:      npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, handoff = 4 : i64} {
// KEEP:      npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, early = 4 : i64} {
// KEEP:      npu_task.task "c" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
// KEEP-NEXT: ^bb0
// KEEP-NEXT:   arith.constant 0 : index
// KEEP-NEXT:   npu_task.sram {offset = 0 : i64}
// KEEP-NEXT:   npu_dma.copy %v

// SIM:      cycles: 6840
// SIM-KEEP: cycles: 6904
// SIM-OFF:  cycles: 6968
