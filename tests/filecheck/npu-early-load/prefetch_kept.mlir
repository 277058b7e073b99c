// RUN: %opt %s -p 'npu-prefetch{reorder=false},npu-early-load' | filecheck %s
// With npu-prefetch's reorder=false, "b"'s prefetch covers its leading run of 4 ops (the
// constant, w's buffer and load, x's buffer); npu-early-load moves both of b's
// weight loads (w, v: outside a's bytes [0, 8192)) ahead of its activation load behind
// all of its buffers, `early` counting 6 ops, and `prefetch` becomes the 6 leading ops
// that may run before its wait (it may not be less than `early`: left at 4, the IR
// would not verify).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768, dma_latency = 50>} {
  func.func @main(%x: memref<16x128xf32, "dram">) {
    %w = npu_task.weight "w" {value = dense<0.5> : tensor<16x128xf32>, offset = 0 : i64} : memref<16x128xf32, "dram">
    %v = npu_task.weight "v" {value = dense<2.0> : tensor<16x128xf32>, offset = 8192 : i64} : memref<16x128xf32, "dram">
    npu_task.task "s" attributes {core = 1 : i64, range = array<i64: 0, 1>, signals = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
    }
    npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tx
    }
    npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sw = npu_task.sram {offset = 8192 : i64} : memref<16x128xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %sw[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      %sx = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      %sv = npu_task.sram {offset = 16384 : i64} : memref<16x128xf32, "sram">
      %tv = npu_dma.copy %v[%c0, %c0] -> %sv[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tw
      npu_dma.wait %tx
      npu_dma.wait %tv
    }
    func.return
  }
}
// CHECK:      npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>, prefetch = 6 : i64, early = 6 : i64} {
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   arith.constant 0 : index
// CHECK-NEXT:   %sw = npu_task.sram {offset = 8192 : i64}
// CHECK-NEXT:   %sx{{.*}} = npu_task.sram {offset = 0 : i64}
// CHECK-NEXT:   %sv = npu_task.sram {offset = 16384 : i64}
// CHECK-NEXT:   %tw = npu_dma.copy %w
// CHECK-NEXT:   %tv = npu_dma.copy %v
// CHECK-NEXT:   %tx{{.*}} = npu_dma.copy %x
