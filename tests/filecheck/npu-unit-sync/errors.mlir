// npu-unit-sync has no options: a misspelt one is a usage error (exit 2) naming the pass.
// RUN: not npu-opt %s -p 'npu-unit-sync{fence=all}' 2>&1 | filecheck %s --check-prefix=NO-OPTION
// NO-OPTION: error: pass 'npu-unit-sync' has no option 'fence'

// A task-level module whose fences were dropped runs, but the simulator reports each
// race between units by op, unit, bytes and cycle, and names the missing fence.
// RUN: npu-run %s 2>&1 | filecheck %s --check-prefix=RACE
// RACE: warning: race: task 'race'{{.*}}'npu_compute.eltwise' (op #{{[0-9]+}} in the task) starts on the vector of core 0 at cycle {{[0-9]+}} while 'npu_compute.matmul' (op #{{[0-9]+}}) on the cube still writes SRAM bytes [16384, 32768) until cycle {{[0-9]+}} (missing npu_compute.fence cube -> vector?)
// RACE: warning: race: task 'race'{{.*}}'npu_dma.copy'{{.*}}starts on the dma of core 0 {{.*}} while 'npu_compute.eltwise' {{.*}} on the vector still writes SRAM bytes [16384, 32768) {{.*}} (missing npu_compute.fence vector -> dma?)

builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: memref<64x64xf32, "dram">, %y: memref<64x64xf32, "dram">) attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    npu_task.task "race" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<64x64xf32, "sram">
      %o = npu_task.sram {offset = 16384 : i64} : memref<64x64xf32, "sram">
      %t0 = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "dram"> -> memref<64x64xf32, "sram">
      npu_dma.wait %t0
      npu_compute.matmul %a, %a -> %o : memref<64x64xf32, "sram">, memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      npu_compute.eltwise relu %o -> %o : memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      %t1 = npu_dma.copy %o[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "sram"> -> memref<64x64xf32, "dram">
      npu_dma.wait %t1
    }
    func.return
  }
}
