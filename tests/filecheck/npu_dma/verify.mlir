// RUN: %opt %s --split-input-file --verify-diagnostics | filecheck %s
// One chunk per verifier error of npu_dma.copy.

// A memref without a memory space.
func.func @f(%x: memref<4x8xf32>, %s: memref<4x8xf32, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x8xf32> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': source must be in memory space "dram" or "sram", got memref<4x8xf32>

// -----

func.func @f(%x: memref<4x8xf32, "dram">, %s: memref<4x8xf32, "l2">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x8xf32, "dram"> -> memref<4x8xf32, "l2">
  func.return
}
// CHECK: 'npu_dma.copy': destination must be in memory space "dram" or "sram", got memref<4x8xf32, "l2">

// -----

// One source offset for a 2-D window.
func.func @f(%x: memref<4x8xf32, "dram">, %s: memref<4x8xf32, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i] -> %s[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x8xf32, "dram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': window has rank 2 but the source has rank 2 and 1 offsets

// -----

// A 1-D destination for a 2-D window.
func.func @f(%x: memref<4x8xf32, "dram">, %s: memref<32xf32, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i] {sizes = array<i64: 4, 8>} : memref<4x8xf32, "dram"> -> memref<32xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': window has rank 2 but the destination has rank 1 and 1 offsets

// -----

func.func @f(%x: memref<4x8xf32, "dram">, %s: memref<4x8xf32, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 0>} : memref<4x8xf32, "dram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': window sizes must be positive, got [4, 0]

// -----

func.func @f(%x: memref<4x8xf32, "dram">, %s: memref<4x4xf32, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x8xf32, "dram"> -> memref<4x4xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': window [4, 8] does not fit the SRAM buffer [4, 4]
