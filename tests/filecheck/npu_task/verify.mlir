// RUN: %opt %s --split-input-file --verify-diagnostics | filecheck %s
// One chunk per verifier error of npu_task.

%w = npu_task.weight "w" {offset = 0 : i64} : memref<4xf32, "sram">
// CHECK: 'npu_task.weight': result must be a "dram" memref, got memref<4xf32, "sram">

// -----

%w = npu_task.weight "w" {offset = -64 : i64} : memref<4xf32, "dram">
// CHECK: 'npu_task.weight': offset must be non-negative, got -64

// -----

%a = npu_task.alloc {offset = 0 : i64} : memref<4xf32>
// CHECK: 'npu_task.alloc': result must be a "dram" memref, got memref<4xf32>

// -----

%a = npu_task.alloc {offset = -1 : i64} : memref<4xf32, "dram">
// CHECK: 'npu_task.alloc': offset must be non-negative, got -1

// -----

%a = npu_task.alloc : memref<4x4xf32, "dram">
%v = npu_task.view %a : memref<4x4xf32, "dram"> to memref<8xf32, "dram">
// CHECK: 'npu_task.view': memref<4x4xf32, "dram"> and memref<8xf32, "dram"> differ in size

// -----

%a = npu_task.alloc : memref<4x4xf32, "dram">
%v = npu_task.view %a {offset = 40 : i64} : memref<4x4xf32, "dram"> to memref<8xf32, "dram">
// CHECK: 'npu_task.view': memref<8xf32, "dram"> at byte offset 40 does not lie inside memref<4x4xf32, "dram">

// -----

%a = npu_task.alloc : memref<4x4xf32, "dram">
%v = npu_task.view %a : memref<4x4xf32, "dram"> to memref<16xf32, "sram">
// CHECK: 'npu_task.view': memref<4x4xf32, "dram"> and memref<16xf32, "sram"> differ in memory space

// -----

%a = npu_task.alloc : memref<16xf32, "dram">
%i = arith.constant 1 : index
%v = npu_task.view %a[%i] : memref<16xf32, "dram"> to memref<4xf32, "dram">
// CHECK: 'npu_task.view' with an index must be inside an 'npu_task.task'

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: index):
  %s = npu_task.sram {offset = 0 : i64} : memref<16xf32, "sram">
  %v = npu_task.view %s[%lo] {offset = 52 : i64} : memref<16xf32, "sram"> to memref<4xf32, "sram">
}
// CHECK: 'npu_task.view': the first block memref<4xf32, "sram"> at byte offset 52 does not lie inside memref<16xf32, "sram">

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: index):
  %s = npu_task.sram {offset = 0 : i64} : memref<4xf32, "dram">
}
// CHECK: 'npu_task.sram': result must be a "sram" memref, got memref<4xf32, "dram">

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: index):
  %s = npu_task.sram {offset = -4 : i64} : memref<4xf32, "sram">
}
// CHECK: 'npu_task.sram': offset must be non-negative, got -4

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: index):
  %s = npu_task.sram {offset = 0 : i64, value = -1 : i64} : memref<4xf32, "sram">
}
// CHECK: 'npu_task.sram': value must be non-negative, got -1

// -----

// SRAM buffers are declared directly in a task body, not in its loops.
npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: index):
  %c1 = arith.constant 1 : index
  scf.for %i = %lo to %hi step %c1 {
    %s = npu_task.sram {offset = 0 : i64} : memref<4xf32, "sram">
  }
}
// CHECK: 'npu_task.sram' must be directly inside an 'npu_task.task'

// -----

npu_task.task "k" attributes {core = -1 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: index):
}
// CHECK: 'npu_task.task' k: core must be non-negative

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 3, -2>} {
^bb0(%lo: index, %hi: index):
}
// CHECK: 'npu_task.task' k: event slots must be non-negative

// -----

// An empty range.
npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 2, 2>} {
^bb0(%lo: index, %hi: index):
}
// CHECK: 'npu_task.task' k: range must be [lo, hi) with 0 <= lo < hi, got [2, 2]

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index):
}
// CHECK: 'npu_task.task' k: the body takes two index arguments (lo, hi)

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1, 2>} {
^bb0(%lo: index, %hi: index):
}
// CHECK: 'npu_task.task' k: range must be [lo, hi) with 0 <= lo < hi, got [0, 1, 2]

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: i64):
}
// CHECK: 'npu_task.task' k: the body takes two index arguments (lo, hi)

// -----

%x = npu_task.alloc : memref<64xf32, "dram">
%b = npu_task.alloc reuse(%x : memref<64xf32, "dram">) : memref<32xf32, "dram">
// CHECK: 'npu_task.alloc': reuse of memref<64xf32, "dram"> by memref<32xf32, "dram">: sizes differ

// -----

// DRAM and SRAM offsets are multiples of the element's bytes.
%w = npu_task.weight "w" {offset = 6 : i64} : memref<4xf32, "dram">
// CHECK: 'npu_task.weight': offset must be a multiple of 4 bytes (f32), got 6

// -----

%a = npu_task.alloc {offset = 2 : i64} : memref<4xf32, "dram">
// CHECK: 'npu_task.alloc': offset must be a multiple of 4 bytes (f32), got 2

// -----

%a = npu_task.alloc {offset = 3 : i64} : memref<4xbf16, "dram">
// CHECK: 'npu_task.alloc': offset must be a multiple of 2 bytes (bf16), got 3

// -----

// An i8 buffer may start at any byte; an i32 one at a multiple of 4.
%a = npu_task.alloc {offset = 3 : i64} : memref<4xi8, "dram">
%b = npu_task.alloc {offset = 6 : i64} : memref<4xi32, "dram">
// CHECK: 'npu_task.alloc': offset must be a multiple of 4 bytes (i32), got 6

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: index):
  %s = npu_task.sram {offset = 66 : i64} : memref<4xf32, "sram">
}
// CHECK: 'npu_task.sram': offset must be a multiple of 4 bytes (f32), got 66

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: index):
  %s = npu_task.sram {offset = 65 : i64} : memref<4xf16, "sram">
}
// CHECK: 'npu_task.sram': offset must be a multiple of 2 bytes (f16), got 65

// -----

// Buffers hold one of the chip's element types.
%w = npu_task.weight "w" {offset = 0 : i64} : memref<4xf64, "dram">
// CHECK: 'npu_task.weight': element type f64 of memref<4xf64, "dram"> is not one of f32, f16, bf16, i8, ui8, i32

// -----

// A view keeps the element type (and its byte offset is a multiple of it).
%a = npu_task.alloc : memref<8xi8, "dram">
%v = npu_task.view %a : memref<8xi8, "dram"> to memref<2xf32, "dram">
// CHECK: 'npu_task.view': memref<8xi8, "dram"> seen as memref<2xf32, "dram">: a view keeps the element type

// -----

%a = npu_task.alloc : memref<8xf16, "dram">
%v = npu_task.view %a {offset = 3 : i64} : memref<8xf16, "dram"> to memref<2xf16, "dram">
// CHECK: 'npu_task.view': byte offset 3 is not a multiple of the 2-byte f16 elements

// -----

%w = npu_task.weight "" {offset = 0 : i64} : memref<4xf32, "dram">
// CHECK: 'npu_task.weight': key must not be empty

// -----

%w = npu_task.weight "b" {value = dense<[1.0, 2.0]> : tensor<2xf32>} : memref<4xf32, "dram">
// CHECK: 'npu_task.weight' b: inline value has 2 elements, memref<4xf32, "dram"> holds 4

// -----

// An SRAM buffer lies inside the core's SRAM: sram_bytes of the module's arch.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 4096>} {
  npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
  ^bb0(%lo: index, %hi: index):
    %s = npu_task.sram {offset = 4032 : i64} : memref<32xf32, "sram">
  }
}
// CHECK: 'npu_task.sram': memref<32xf32, "sram"> at bytes [4032, 4160) is not within [0, 4096) (sram_bytes of the arch)

// -----

// The default arch has 4 cores.
npu_task.task "k" attributes {core = 4 : i64, range = array<i64: 0, 1>} {
^bb0(%lo: index, %hi: index):
}
// CHECK: 'npu_task.task' k: core 4 is out of range [0, 4) (cores of the arch)

// -----

builtin.module attributes {npu.arch = #npu.arch<event_slots = 16>} {
  npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>, waits = array<i64: 3, 16>} {
  ^bb0(%lo: index, %hi: index):
  }
}
// CHECK: 'npu_task.task' k: waits on event slot 16 is out of range [0, 16) (event_slots of the arch)

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>, signals = array<i64: 64>} {
^bb0(%lo: index, %hi: index):
}
// CHECK: 'npu_task.task' k: signals event slot 64 is out of range [0, 64) (event_slots of the arch)

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>, parts = 0 : i64} {
^bb0(%lo: index, %hi: index):
}
// CHECK: 'npu_task.task' k: parts must be at least 1, got 0

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = -5 : i64} {
^bb0(%lo: index, %hi: index):
}
// CHECK: 'npu_task.task' k: predicted_cycles must be at least 0, got -5

// -----

npu_task.task "k" attributes {core = 0 : i64, range = array<i64: 0, 1>, dram_bytes = -64 : i64} {
^bb0(%lo: index, %hi: index):
}
// CHECK: 'npu_task.task' k: dram_bytes must be at least 0, got -64
