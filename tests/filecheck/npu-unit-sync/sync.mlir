// npu-unit-sync fences a core's concurrent units where their SRAM accesses conflict:
// a tile loop of matmul (cube) + relu (vector) + store. The relu waits for the cube
// on the accumulator, the store for both, the next step's load for the cube that read
// the previous input (carried across steps), the matmul for the vector unit that last
// wrote the accumulator's bytes (the pong of the step before: at run time it waits
// for nothing). The simulator runs the result without a race and with the serial
// arch's outputs.
// RUN: %opt %s -p npu-unit-sync | filecheck %s
// RUN: %opt %s -p npu-unit-sync -o %t.mlir && npu-run %t.mlir 2>&1 | filecheck %s --check-prefix=SIM

// CHECK-LABEL: npu_task.task "mm"
// CHECK:       scf.for
// CHECK:         npu_compute.fence cube -> dma on %[[NEXT:.*]] : memref<64x256xf32, "sram">
// CHECK-NEXT:    npu_dma.copy %{{.*}} -> %[[NEXT]]
// CHECK:         npu_compute.fence vector -> cube on %[[ACC:.*]] : memref<64x256xf32, "sram">
// CHECK-NEXT:    npu_compute.matmul %{{.*}}, %{{.*}} -> %[[ACC]]
// CHECK-NEXT:    npu_compute.fence cube -> vector on %[[ACC]] : memref<64x256xf32, "sram">
// CHECK-NEXT:    npu_compute.eltwise relu %[[ACC]] -> %[[ACC]]
// CHECK:         npu_compute.fence vector -> dma on %[[ACC]]
// CHECK-NEXT:    npu_compute.fence cube -> dma on %[[ACC]]
// CHECK-NEXT:    npu_dma.copy %[[ACC]]
// CHECK:       }
// CHECK-NOT:   npu_compute.fence
// CHECK:       npu_dma.wait

// SIM:     cycles:
// SIM-NOT: race
// SIM-NOT: warning

builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: memref<256x256xf32, "dram">, %w: memref<256x256xf32, "dram">, %y: memref<256x256xf32, "dram">) attributes {npu.inputs = ["x", "w"], npu.outputs = ["y"]} {
    npu_task.task "mm" attributes {core = 0 : i64, range = array<i64: 0, 4>} {
    ^bb0(%lo: index, %hi: index):
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %c1 = arith.constant 1 : index
      %c0 = arith.constant 0 : index
      %a0 = npu_task.sram {offset = 0 : i64} : memref<64x256xf32, "sram">
      %a1 = npu_task.sram {offset = 65536 : i64} : memref<64x256xf32, "sram">
      %b = npu_task.sram {offset = 131072 : i64} : memref<256x256xf32, "sram">
      %o0 = npu_task.sram {offset = 393216 : i64} : memref<64x256xf32, "sram">
      %o1 = npu_task.sram {offset = 458752 : i64} : memref<64x256xf32, "sram">
      %tw = npu_dma.copy %w[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 256, 256>} : memref<256x256xf32, "dram"> -> memref<256x256xf32, "sram">
      %tx = npu_dma.copy %x[%c0, %c0] -> %a0[%c0, %c0] {sizes = array<i64: 64, 256>} : memref<256x256xf32, "dram"> -> memref<64x256xf32, "sram">
      %done = npu_dma.done
      npu_dma.wait %tw
      %r:2 = scf.for %i = %lo to %hi step %c1 iter_args(%in = %tx, %out = %done) -> (!npu_dma.token, !npu_dma.token) {
        %k = arith.subi %i, %lo : index
        %par = arith.remui %k, %c2 : index
        %odd = arith.cmpi eq, %par, %c1 : index
        %cur = arith.select %odd, %a1, %a0 : memref<64x256xf32, "sram">
        %acc = arith.select %odd, %o1, %o0 : memref<64x256xf32, "sram">
        %nxt = arith.select %odd, %a0, %a1 : memref<64x256xf32, "sram">
        %i1 = arith.addi %i, %c1 : index
        %last = arith.cmpi ult, %i1, %hi : index
        %row = arith.muli %i1, %c64 : index
        %tn = npu_dma.copy %x[%row, %c0] -> %nxt[%c0, %c0] {sizes = array<i64: 64, 256>, pad_value = 0.0 : f32} : memref<256x256xf32, "dram"> -> memref<64x256xf32, "sram">
        npu_dma.wait %in
        npu_compute.matmul %cur, %b -> %acc : memref<64x256xf32, "sram">, memref<256x256xf32, "sram"> -> memref<64x256xf32, "sram">
        npu_compute.eltwise relu %acc -> %acc : memref<64x256xf32, "sram"> -> memref<64x256xf32, "sram">
        %orow = arith.muli %i, %c64 : index
        npu_dma.wait %out
        %ts = npu_dma.copy %acc[%c0, %c0] -> %y[%orow, %c0] {sizes = array<i64: 64, 256>} : memref<64x256xf32, "sram"> -> memref<256x256xf32, "dram">
        scf.yield %tn, %ts : !npu_dma.token, !npu_dma.token
      }
      npu_dma.wait %r#0
      npu_dma.wait %r#1
    }
    func.return
  }
}
