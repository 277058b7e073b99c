// Cases where npu-unit-sync must not fence:
// - on an arch whose units run one op at a time (`units = serial`) nothing changes;
// - ops of one unit only (a vector chain): a unit runs its queue in order;
// - a copy into SRAM bytes no compute op has touched, and compute on other bytes.
// RUN: %opt %s --split-input-file -p npu-unit-sync | filecheck %s

// CHECK-LABEL: npu_task.task "serial"
// CHECK-NOT:   npu_compute.fence
// CHECK:       npu_compute.matmul
// CHECK-NEXT:  npu_compute.eltwise relu
// CHECK-NEXT:  npu_dma.copy
builtin.module attributes {npu.arch = #npu.arch<cores = 1, units = serial>} {
  func.func @main(%y: memref<64x64xf32, "dram">) {
    npu_task.task "serial" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<64x64xf32, "sram">
      %o = npu_task.sram {offset = 16384 : i64} : memref<64x64xf32, "sram">
      npu_compute.fill %a {value = 1.0 : f32} : memref<64x64xf32, "sram">
      npu_compute.matmul %a, %a -> %o : memref<64x64xf32, "sram">, memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      npu_compute.eltwise relu %o -> %o : memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      %t = npu_dma.copy %o[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "sram"> -> memref<64x64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}

// -----

// CHECK-LABEL: npu_task.task "vector_chain"
// CHECK-NOT:   npu_compute.fence
// CHECK:       npu_compute.eltwise relu
// CHECK-NEXT:  npu_compute.eltwise exp
// CHECK-NEXT:  npu_compute.fence vector -> dma on
// CHECK-NEXT:  npu_dma.copy
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: memref<64x64xf32, "dram">, %y: memref<64x64xf32, "dram">) {
    npu_task.task "vector_chain" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<64x64xf32, "sram">
      %t0 = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "dram"> -> memref<64x64xf32, "sram">
      npu_dma.wait %t0
      npu_compute.eltwise relu %a -> %a : memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      npu_compute.eltwise exp %a -> %a : memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      %t1 = npu_dma.copy %a[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "sram"> -> memref<64x64xf32, "dram">
      npu_dma.wait %t1
    }
    func.return
  }
}

// -----

// The load into %b and the relu on %c touch bytes the matmul never uses.
// CHECK-LABEL: npu_task.task "apart"
// CHECK:       npu_compute.matmul
// CHECK-NOT:   npu_compute.fence
// CHECK:       npu_dma.copy %{{.*}} -> %b
// CHECK-NOT:   npu_compute.fence
// CHECK:       npu_compute.eltwise relu %c
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: memref<64x64xf32, "dram">) {
    npu_task.task "apart" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<64x64xf32, "sram">
      %o = npu_task.sram {offset = 16384 : i64} : memref<64x64xf32, "sram">
      %b = npu_task.sram {offset = 32768 : i64} : memref<64x64xf32, "sram">
      %c = npu_task.sram {offset = 49152 : i64} : memref<64x64xf32, "sram">
      %t0 = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "dram"> -> memref<64x64xf32, "sram">
      npu_dma.wait %t0
      npu_compute.matmul %a, %a -> %o : memref<64x64xf32, "sram">, memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      %t1 = npu_dma.copy %x[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "dram"> -> memref<64x64xf32, "sram">
      npu_dma.wait %t1
      npu_compute.eltwise relu %c -> %c : memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
    }
    func.return
  }
}

// -----

// With `bias_unit = cube` a product's bias add (`cube_output`) runs on the cube, in
// its queue after the product: no fence between them; the vector relu after it waits
// for the cube. With `bias_unit = vector` (the default) the same add is a vector op
// fenced after the matmul (sync.mlir's relu case).
// CHECK-LABEL: npu_task.task "bias_on_cube"
// CHECK:       npu_compute.matmul
// CHECK-NEXT:  npu_compute.eltwise add %[[O:.*]], %{{.*}} -> %[[O]] {cube_output}
// CHECK-NEXT:  npu_compute.fence cube -> vector on %[[O]]
// CHECK-NEXT:  npu_compute.eltwise relu %[[O]] -> %[[O]]
builtin.module attributes {npu.arch = #npu.arch<cores = 1, bias_unit = cube>} {
  func.func @main(%bias: memref<1x64xf32, "dram">, %y: memref<64x64xf32, "dram">) {
    npu_task.task "bias_on_cube" attributes {core = 0 : i64, range = array<i64: 0, 1>} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %a = npu_task.sram {offset = 0 : i64} : memref<64x64xf32, "sram">
      %b = npu_task.sram {offset = 16384 : i64} : memref<1x64xf32, "sram">
      %o = npu_task.sram {offset = 32768 : i64} : memref<64x64xf32, "sram">
      %l = npu_dma.copy %bias[%c0, %c0] -> %b[%c0, %c0] {sizes = array<i64: 1, 64>} : memref<1x64xf32, "dram"> -> memref<1x64xf32, "sram">
      npu_dma.wait %l
      npu_compute.fill %a {value = 1.0 : f32} : memref<64x64xf32, "sram">
      npu_compute.matmul %a, %a -> %o : memref<64x64xf32, "sram">, memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      npu_compute.eltwise add %o, %b -> %o {cube_output} : memref<64x64xf32, "sram">, memref<1x64xf32, "sram"> -> memref<64x64xf32, "sram">
      npu_compute.eltwise relu %o -> %o : memref<64x64xf32, "sram"> -> memref<64x64xf32, "sram">
      %t = npu_dma.copy %o[%c0, %c0] -> %y[%c0, %c0] {sizes = array<i64: 64, 64>} : memref<64x64xf32, "sram"> -> memref<64x64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}
