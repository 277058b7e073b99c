// npu-software-pipeline rotates a tile loop's store by one step: iteration j waits for
// the store of step j-2 before its matmul overwrites that accumulator, computes, then
// stores step j-1 (not in the first iteration); the loop carries that store's buffer
// and row; the peeled last step stores the loop's last step after its own compute.
// With the fences npu-unit-sync adds, step j+1's matmul now runs while step j's relu
// does: 14288 -> 13056 cycles, the memory sanitizer clean (every read finds the value
// it names, so the data flow is the program's).
// RUN: %opt %s -p npu-software-pipeline | filecheck %s
// RUN: %opt %s -p npu-unit-sync -o %t.0.mlir && npu-run %t.0.mlir --sanitize 2>&1 | filecheck %s --check-prefix=BEFORE
// RUN: %opt %s -p npu-software-pipeline,npu-unit-sync -o %t.mlir && npu-run %t.mlir --sanitize 2>&1 | filecheck %s --check-prefix=AFTER

// CHECK-LABEL: npu_task.task "mm"
// CHECK:       %{{.*}}, %{{.*}}, %[[ACC:.*]], %[[ROW:.*]] = scf.for %[[I:.*]] = %[[LB:[^ ]*]] to %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[PREV:.*]] = %{{.*}}, %[[PACC:.*]] = %{{.*}}, %[[PROW:[^ ]*]] = %{{.*}})
// CHECK:         npu_dma.wait %[[PREV]]
// CHECK-NEXT:    npu_compute.matmul %{{.*}}, %{{.*}} -> %[[A:.*]] :
// CHECK-NEXT:    npu_compute.eltwise relu %[[A]] -> %[[A]]
// CHECK-NEXT:    %[[R:.*]] = arith.muli %[[I]]
// CHECK-NEXT:    %[[FIRST:.*]] = arith.cmpi ne, %[[I]], %[[LB]] : index
// CHECK-NEXT:    %[[T:.*]] = scf.if %[[FIRST]] -> (!npu_dma.token) {
// CHECK-NEXT:      %[[S:.*]] = npu_dma.copy %[[PACC]][%{{.*}}, %{{.*}}] -> %{{.*}}[%[[PROW]], %{{.*}}]
// CHECK-NEXT:      scf.yield %[[S]] : !npu_dma.token
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %[[PREV]] : !npu_dma.token
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.yield %{{.*}}, %[[T]], %[[A]], %[[R]]
// CHECK:       npu_compute.matmul
// CHECK:       %[[RAN:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:  %[[LAST:.*]] = scf.if %[[RAN]] -> (!npu_dma.token) {
// CHECK-NEXT:    npu_dma.copy %[[ACC]][%{{.*}}, %{{.*}}] -> %{{.*}}[%[[ROW]], %{{.*}}]
// CHECK:       npu_dma.wait %[[LAST]]
// CHECK-NEXT:  npu_dma.copy

// BEFORE:     cycles:      14288
// BEFORE-NOT: warning
// AFTER:      cycles:      13056
// AFTER-NOT:  warning

builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%0: memref<512x256xf32, "dram">, %2: memref<256x256xf32, "dram">, %1: memref<512x256xf32, "dram">) attributes {npu.inputs = ["x", "w"], npu.outputs = ["z"]} {
    npu_task.task "mm" attributes {core = 0 : i64, range = array<i64: 0, 8>, predicted_cycles = 13912 : i64, dram_bytes = 1310720 : i64} {
    ^bb0(%3: index, %4: index):
      %5 = arith.constant 2 : index
      %6 = arith.constant 64 : index
      %7 = arith.constant 1 : index
      %8 = arith.constant 0 : index
      %9 = npu_task.sram {offset = 0 : i64} : memref<64x256xf32, "sram">
      %10 = npu_task.sram {offset = 65536 : i64} : memref<64x256xf32, "sram">
      %11 = npu_task.sram {offset = 131072 : i64} : memref<256x256xf32, "sram">
      %12 = npu_task.sram {offset = 393216 : i64} : memref<64x256xf32, "sram">
      %13 = npu_task.sram {offset = 458752 : i64} : memref<64x256xf32, "sram">
      %14 = npu_dma.copy %2[%8, %8] -> %11[%8, %8] {sizes = array<i64: 256, 256>, pad_value = 0.000000e+00 : f32} : memref<256x256xf32, "dram"> -> memref<256x256xf32, "sram">
      %15 = arith.muli %3, %6 : index
      %16 = npu_dma.copy %0[%15, %8] -> %9[%8, %8] {sizes = array<i64: 64, 256>, pad_value = 0.000000e+00 : f32} : memref<512x256xf32, "dram"> -> memref<64x256xf32, "sram">
      %17 = arith.subi %4, %7 : index
      %18 = npu_dma.done
      %19, %20 = scf.for %21 = %3 to %17 step %7 iter_args(%22 = %16, %23 = %18) -> (!npu_dma.token, !npu_dma.token) {
        %24 = arith.subi %21, %3 : index
        %25 = arith.remui %24, %5 : index
        %26 = arith.cmpi eq, %25, %7 : index
        %27 = arith.select %26, %10, %9 : memref<64x256xf32, "sram">
        %28 = arith.select %26, %13, %12 : memref<64x256xf32, "sram">
        %29 = arith.select %26, %9, %10 : memref<64x256xf32, "sram">
        %30 = arith.addi %21, %7 : index
        %31 = arith.muli %30, %6 : index
        %32 = npu_dma.copy %0[%31, %8] -> %29[%8, %8] {sizes = array<i64: 64, 256>, pad_value = 0.000000e+00 : f32} : memref<512x256xf32, "dram"> -> memref<64x256xf32, "sram">
        npu_dma.wait %22
        npu_dma.wait %14
        npu_compute.matmul %27, %11 -> %28 : memref<64x256xf32, "sram">, memref<256x256xf32, "sram"> -> memref<64x256xf32, "sram">
        npu_compute.eltwise relu %28 -> %28 : memref<64x256xf32, "sram"> -> memref<64x256xf32, "sram">
        %33 = arith.muli %21, %6 : index
        npu_dma.wait %23
        %34 = npu_dma.copy %28[%8, %8] -> %1[%33, %8] {sizes = array<i64: 64, 256>, clip} : memref<64x256xf32, "sram"> -> memref<512x256xf32, "dram">
        scf.yield %32, %34 : !npu_dma.token, !npu_dma.token
      }
      %35 = arith.subi %17, %3 : index
      %36 = arith.remui %35, %5 : index
      %37 = arith.cmpi eq, %36, %7 : index
      %38 = arith.select %37, %10, %9 : memref<64x256xf32, "sram">
      %39 = arith.select %37, %13, %12 : memref<64x256xf32, "sram">
      npu_dma.wait %19
      npu_dma.wait %14
      npu_compute.matmul %38, %11 -> %39 : memref<64x256xf32, "sram">, memref<256x256xf32, "sram"> -> memref<64x256xf32, "sram">
      npu_compute.eltwise relu %39 -> %39 : memref<64x256xf32, "sram"> -> memref<64x256xf32, "sram">
      %40 = arith.muli %17, %6 : index
      npu_dma.wait %20
      %41 = npu_dma.copy %39[%8, %8] -> %1[%40, %8] {sizes = array<i64: 64, 256>, clip} : memref<64x256xf32, "sram"> -> memref<512x256xf32, "dram">
      npu_dma.wait %41
    }
    func.return
  }
}

