// A misspelt option is a usage error (exit 2) from npu-opt, naming the pass's options.
// RUN: not npu-opt %s --split-input-file -p 'npu-early-load{miror=false}' 2>&1 | filecheck %s --check-prefix=NO-OPTION
// NO-OPTION:      error: pass 'npu-early-load' has no option 'miror'
// NO-OPTION-NEXT: hint: its options: mirror
// `early` covering more than scalar ops, buffers and weight loads, or more ops than
// `prefetch`, and a `handoff` past the body's end do not verify (exit 1), naming the
// task (and the op), at the task: one chunk each, --verify-diagnostics checking the
// expected-error annotations.
// RUN: %opt %s --split-input-file -p npu-early-load --verify-diagnostics -o /dev/null

builtin.module {
  func.func @main(%x: memref<16x128xf32, "dram">) {
    // expected-error @+1 {{'npu_task.task' q: early 3 covers op #2 'npu_dma.copy', which is not a scalar op, an SRAM buffer or a load of a weight}}
    npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, early = 3 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tx
    }
    func.return
  }
}

// -----

builtin.module {
  func.func @main(%x: memref<16x128xf32, "dram">) {
    // expected-error @+1 {{'npu_task.task' q: early 2 exceeds prefetch 1 (the ops run during the previous task must be among those run before the waits)}}
    npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, prefetch = 1 : i64, early = 2 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tx
    }
    func.return
  }
}

// -----

builtin.module {
  func.func @main(%x: memref<16x128xf32, "dram">) {
    // expected-error @+1 {{'npu_task.task' q: handoff 9 is not in [0, 4] (the body's op count)}}
    npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, handoff = 9 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tx
    }
    func.return
  }
}
