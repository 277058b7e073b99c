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

// -----

// DMA moves f32 elements only.
func.func @f(%x: memref<4x8xi32, "dram">, %s: memref<4x8xf32, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x8xi32, "dram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': operand #0 has element type i32; only f32 is supported

// -----

// A window larger than its source needs pad_value, wherever it starts.
func.func @f(%x: memref<4x6xf32, "dram">, %s: memref<4x8xf32, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x6xf32, "dram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': source window along dim 1 (at any offset) [0, 8) is not within [0, 6) (dim 1 of memref<4x6xf32, "dram">), and the copy has no pad_value

// -----

// A constant source offset that leaves the source (no pad_value).
func.func @f(%x: memref<8x8xf32, "dram">, %s: memref<4x8xf32, "sram">) {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %t = npu_dma.copy %x[%c6, %c0] -> %s[%c0, %c0] {sizes = array<i64: 4, 8>} : memref<8x8xf32, "dram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': source window along dim 0 [6, 10) is not within [0, 8) (dim 0 of memref<8x8xf32, "dram">), and the copy has no pad_value

// -----

// A DRAM destination smaller than the window needs clip.
func.func @f(%s: memref<4x8xf32, "sram">, %y: memref<3x8xf32, "dram">, %i: index) {
  %t = npu_dma.copy %s[%i, %i] -> %y[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x8xf32, "sram"> -> memref<3x8xf32, "dram">
  func.return
}
// CHECK: 'npu_dma.copy': destination window along dim 0 (at any offset) [0, 4) is not within [0, 3) (dim 0 of memref<3x8xf32, "dram">), and the copy is not clip

// -----

// A negative constant destination offset (no clip).
func.func @f(%s: memref<4x8xf32, "sram">, %y: memref<8x8xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %m1 = arith.constant -1 : index
  %t = npu_dma.copy %s[%c0, %c0] -> %y[%m1, %c0] {sizes = array<i64: 4, 8>} : memref<4x8xf32, "sram"> -> memref<8x8xf32, "dram">
  func.return
}
// CHECK: 'npu_dma.copy': destination window along dim 0 [-1, 3) is not within [0, 8) (dim 0 of memref<8x8xf32, "dram">), and the copy is not clip

// -----

// A task waits only for its own copies.
func.func @f(%x: memref<4xf32, "dram">, %y: memref<4xf32, "dram">) {
  %c0 = arith.constant 0 : index
  %t = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 4>} : memref<4xf32, "dram"> -> memref<4xf32, "dram">
  npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
  ^bb0(%lo: index, %hi: index):
    npu_dma.wait %t
  }
  func.return
}
// CHECK: 'npu_dma.wait': its token comes from no task but the wait is in task 'b'

// -----

// src_clip keeps the destination outside the source as it is: it cannot pad it too.
func.func @f(%x: memref<4x6xf32, "dram">, %s: memref<4x8xf32, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 8>, pad_value = 0.0 : f32, src_clip} : memref<4x6xf32, "dram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': src_clip leaves the destination outside the source as it is, so it cannot also pad it (pad_value)
