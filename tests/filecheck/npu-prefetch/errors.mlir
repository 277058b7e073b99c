// A misspelt option is a usage error (exit 2) from npu-opt, naming the pass's options.
// RUN: not npu-opt %s -p 'npu-prefetch{reoder=false}' 2>&1 | filecheck %s --check-prefix=NO-OPTION
// NO-OPTION:      error: pass 'npu-prefetch' has no option 'reoder'
// NO-OPTION-NEXT: hint: its options: reorder
// A prefetch that covers more than scalar ops, buffers and weight loads does not verify (exit 1),
// naming the task and the op, at the task (--verify-diagnostics checks the expected-error
// annotation).
// RUN: %opt %s -p npu-prefetch --verify-diagnostics -o /dev/null

builtin.module {
  func.func @main(%x: memref<16x128xf32, "dram">) {
    // expected-error @+1 {{'npu_task.task' q: prefetch 3 covers op #2 'npu_dma.copy', which is not a scalar op, an SRAM buffer or a load of a weight}}
    npu_task.task "q" attributes {core = 1 : i64, range = array<i64: 0, 1>, waits = array<i64: 0>, prefetch = 3 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %sx = npu_task.sram {offset = 0 : i64} : memref<16x128xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %sx[%c0, %c0] {sizes = array<i64: 16, 128>} : memref<16x128xf32, "dram"> -> memref<16x128xf32, "sram">
      npu_dma.wait %tx
    }
    func.return
  }
}
