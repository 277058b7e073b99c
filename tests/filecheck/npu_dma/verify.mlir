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

// A copy moves bytes: source and destination hold one element type.
func.func @f(%x: memref<4x8xi32, "dram">, %s: memref<4x8xf32, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x8xi32, "dram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': source holds i32 but destination holds f32; a copy moves bytes and converts nothing

// -----

func.func @f(%x: memref<4x8xf16, "dram">, %s: memref<4x8xbf16, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x8xf16, "dram"> -> memref<4x8xbf16, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': source holds f16 but destination holds bf16; a copy moves bytes and converts nothing

// -----

// An element type the chip does not hold.
func.func @f(%x: memref<4x8xf64, "dram">, %s: memref<4x8xf64, "sram">, %i: index) {
  %t = npu_dma.copy %x[%i, %i] -> %s[%i, %i] {sizes = array<i64: 4, 8>} : memref<4x8xf64, "dram"> -> memref<4x8xf64, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': source element type f64 is not one of f32, f16, bf16, i8, ui8, i32

// -----

// The padding of an integer buffer is an integer of its range (a zero point).
func.func @f(%x: memref<4x8xi8, "dram">, %s: memref<6x10xi8, "sram">, %c0: index, %m1: index) {
  %t = npu_dma.copy %x[%m1, %m1] -> %s[%c0, %c0] {sizes = array<i64: 6, 10>, pad_value = 0xFF800000 : f32} : memref<4x8xi8, "dram"> -> memref<6x10xi8, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': pad_value -inf is not an integer in [-128, 127] (the i8 destination)

// -----

func.func @f(%x: memref<4x8xui8, "dram">, %s: memref<6x10xui8, "sram">, %c0: index, %m1: index) {
  %t = npu_dma.copy %x[%m1, %m1] -> %s[%c0, %c0] {sizes = array<i64: 6, 10>, pad_value = 300.0 : f32} : memref<4x8xui8, "dram"> -> memref<6x10xui8, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': pad_value 300 is not an integer in [0, 255] (the ui8 destination)

// -----

func.func @f(%x: memref<4x8xi8, "dram">, %s: memref<6x10xi8, "sram">, %c0: index, %m1: index) {
  %t = npu_dma.copy %x[%m1, %m1] -> %s[%c0, %c0] {sizes = array<i64: 6, 10>, pad_value = 0.5 : f32} : memref<4x8xi8, "dram"> -> memref<6x10xi8, "sram">
  func.return
}
// CHECK: 'npu_dma.copy': pad_value 0.5 is not an integer in [-128, 127] (the i8 destination)
