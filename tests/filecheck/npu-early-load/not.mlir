// RUN: %opt %s -p npu-early-load | filecheck %s
// npu-early-load must not fire: the first task of each core (nothing runs before it
// there), a task whose weight load comes after its first wait (not in its prologue),
// a task whose weight buffer overlaps its core's previous task's bytes as laid
// out and mirrored (that task holds all 32 KiB of SRAM), and a task that also loads
// the weight in a loop (its prologue load is a tile loop's first tile: the loop's
// pace is its DRAM traffic, a head start does not change it), and a load smaller
// than dram_bw x dma_latency = 6400 bytes ("tiny", 4 KiB: it would save at most its
// latency, which the task's other prologue loads overlap anyway).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768, dma_latency = 50>} {
  func.func @main(%x: memref<16x128xf32, "dram">, %y: memref<64x128xf32, "dram">) {
    %w = npu_task.weight "w" {value = dense<0.5> : tensor<16x128xf32>, offset = 0 : i64} : memref<16x128xf32, "dram">
    npu_task.task "first0" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sw = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tw
    }
    npu_task.task "first1" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sy = npu_task.sram {offset = 0 : i64} : memref<64x128xf32, "sram">
      %ty = npu_dma.copy %y[%c0, %c0] -> %sy[%c0, %c0] {sizes = array<i64: 64, 128>} : memref<64x128xf32, "dram"> -> memref<64x128xf32, "sram">
      npu_dma.wait %ty
    }
    npu_task.task "late" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tx
      %sw = npu_task.sram {offset = 8192 : i64} : memref<16x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tw
    }
    npu_task.task "full" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sw = npu_task.sram {offset = 8192 : i64} : memref<16x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tw
    }
    npu_task.task "streamed" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %sw = npu_task.sram {offset = 16384 : i64} : memref<16x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tw
      scf.for %i = %c1 to %c2 step %c1 {
        %t = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
        npu_dma.wait %t
      }
    }
    npu_task.task "tiny" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sw = npu_task.sram {offset = 8192 : i64} : memref<8x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 8, 128>} : memref<16x128xf32, "dram"> -> memref<8x128xf32, "sram">
      npu_dma.wait %tw
    }
    func.return
  }
}
// CHECK:      npu_task.task "first0" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
// CHECK:      npu_task.task "first1" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
// CHECK:      npu_task.task "late" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   arith.constant 0 : index
// CHECK-NEXT:   npu_task.sram {offset = 0 : i64}
// CHECK-NEXT:   npu_dma.copy %x
// CHECK:      npu_task.task "full" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   arith.constant 0 : index
// CHECK-NEXT:   npu_task.sram {offset = 8192 : i64}
// CHECK:      npu_task.task "streamed" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
// CHECK:      npu_task.task "tiny" attributes {core = 1 : i64, range = array<i64: 0, 1>} {
