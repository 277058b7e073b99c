// A task-level module whose SRAM buffer lies past the arch's sram_bytes (npu_task's verifier).
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 1024>} {
  func.func @main(%x: memref<2x8xf32, "dram">, %y: memref<2x8xf32, "dram">) attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    npu_task.task "act" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %0 = npu_task.sram {offset = 4096 : i64} : memref<2x8xf32, "sram">
    }
    func.return
  }
}
