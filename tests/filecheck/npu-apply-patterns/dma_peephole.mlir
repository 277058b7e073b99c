// RUN: %opt %s -p 'npu-apply-patterns{file=%S/../../../examples/patterns/self_copy.pdl.mlir}' | filecheck %s

// The DMA peephole example (examples/patterns/self_copy.pdl.mlir): a copy of an SRAM
// buffer onto itself at the same offsets goes with its wait; a copy at other offsets,
// and a self-copy with a pad_value (it writes the pad), stay.
builtin.module {
  func.func @main(%x: memref<8x8xf32, "dram">) {
    npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %a = npu_task.sram {offset = 0 : i64} : memref<8x8xf32, "sram">
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %t0 = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 8, 8>} : memref<8x8xf32, "dram"> -> memref<8x8xf32, "sram">
      npu_dma.wait %t0
      %t1 = npu_dma.copy %a[%c0, %c2] -> %a[%c0, %c2] {sizes = array<i64: 8, 4>} : memref<8x8xf32, "sram"> -> memref<8x8xf32, "sram">
      npu_dma.wait %t1
      %t2 = npu_dma.copy %a[%c0, %c0] -> %a[%c2, %c0] {sizes = array<i64: 4, 8>} : memref<8x8xf32, "sram"> -> memref<8x8xf32, "sram">
      npu_dma.wait %t2
      %t3 = npu_dma.copy %a[%c2, %c2] -> %a[%c2, %c2] {sizes = array<i64: 4, 4>, pad_value = 0.0 : f32} : memref<8x8xf32, "sram"> -> memref<8x8xf32, "sram">
      npu_dma.wait %t3
    }
    func.return
  }
}
// CHECK:      %[[T0:.*]] = npu_dma.copy %{{.*}}[%[[C0:.*]], %[[C0]]] -> %[[A:.*]][%[[C0]], %[[C0]]]
// CHECK-NEXT: npu_dma.wait %[[T0]]
// CHECK-NEXT: %[[T2:.*]] = npu_dma.copy %[[A]][%[[C0]], %[[C0]]] -> %[[A]][%[[C2:.*]], %[[C0]]]
// CHECK-NEXT: npu_dma.wait %[[T2]]
// CHECK-NEXT: %[[T3:.*]] = npu_dma.copy %[[A]][%[[C2]], %[[C2]]] -> %[[A]][%[[C2]], %[[C2]]] {{.*}}pad_value
// CHECK-NEXT: npu_dma.wait %[[T3]]
