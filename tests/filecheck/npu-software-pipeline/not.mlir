// Loops npu-software-pipeline leaves alone:
// - on a core whose units run one op at a time (`units = serial`): nothing to overlap;
// - a loop with no cube op before its store (only the vector unit works: nothing runs
//   beside it);
// - one accumulator for every step (SRAM was short for a pong, so the bufferizer gave the
//   steps one buffer): step j+1's cube op would overwrite what step j's store reads.
// RUN: %opt %s --split-input-file -p npu-software-pipeline | filecheck %s

// CHECK-LABEL: npu_task.task "mm"
// CHECK:       scf.for
// CHECK:         npu_compute.matmul
// CHECK-NEXT:    npu_compute.eltwise relu
// CHECK-NOT:     scf.if
// CHECK:         npu_dma.copy {{.*}} -> %2[
// CHECK-NEXT:    scf.yield
builtin.module attributes {npu.arch = #npu.arch<cores = 1, units = serial>} {
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


// -----

// CHECK-LABEL: npu_task.task "mm"
// CHECK:       scf.for
// CHECK:         npu_compute.eltwise exp
// CHECK-NEXT:    npu_compute.eltwise relu
// CHECK-NOT:     scf.if
// CHECK:         npu_dma.copy {{.*}} -> %2[
// CHECK-NEXT:    scf.yield
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
        npu_compute.eltwise exp %27 -> %28 : memref<64x256xf32, "sram"> -> memref<64x256xf32, "sram">
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
      npu_compute.eltwise exp %38 -> %39 : memref<64x256xf32, "sram"> -> memref<64x256xf32, "sram">
      npu_compute.eltwise relu %39 -> %39 : memref<64x256xf32, "sram"> -> memref<64x256xf32, "sram">
      %40 = arith.muli %17, %6 : index
      npu_dma.wait %20
      %41 = npu_dma.copy %39[%8, %8] -> %1[%40, %8] {sizes = array<i64: 64, 256>, clip} : memref<64x256xf32, "sram"> -> memref<512x256xf32, "dram">
      npu_dma.wait %41
    }
    func.return
  }
}


// -----

// CHECK-LABEL: npu_task.task "mm"
// CHECK:       scf.for
// CHECK:         npu_compute.matmul
// CHECK-NEXT:    npu_compute.eltwise relu
// CHECK-NOT:     scf.if
// CHECK:         npu_dma.copy {{.*}} -> %2[
// CHECK-NEXT:    scf.yield
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
        %28 = arith.select %26, %12, %12 : memref<64x256xf32, "sram">
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
      %39 = arith.select %37, %12, %12 : memref<64x256xf32, "sram">
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

