// RUN: %opt %s -p npu-tile-loops,npu-bufferize,npu-schedule,npu-task-canonicalize,npu-events,npu-memplan -o %t.mlir && filecheck %s < %t.mlir
// RUN: npu-run %t.mlir 2>&1 | filecheck %s --check-prefix=SIM
// RUN: %opt %s -p npu-tile-loops,npu-bufferize,npu-schedule,npu-events,npu-memplan -o %t.off.mlir && npu-run %t.off.mlir 2>&1 | filecheck %s --check-prefix=OFF

// Between npu-schedule and npu-events: a double-buffered gemm with m and k grids 1
// over 8 weight tiles, split over two cores. Each part keeps one activation slot,
// loaded once before its steps (npu-bufferize hoists the window that stays put, so
// npu-task-canonicalize finds nothing left to collapse here: with it off the run
// reads the same bytes); the weights alternate. npu-events and npu-memplan run on the
// result and the simulator (with the memory sanitizer, NPU_SANITIZE=1 in lit) runs
// it: each part reads the 512-byte activation once instead of once per weight tile
// (17408 bytes read instead of 20480).
builtin.module attributes {npu.arch = #npu.arch<cores = 2>} {
  func.func @main(%x: tensor<4x32xf32>) -> tensor<4x128xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<128x32xf32>} : tensor<128x32xf32>
    %y = npu_tile.kernel "fc"(%x, %w) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 16, 32>, grid = array<i64: 1, 8, 1>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 1000 : i64, parts = 2 : i64} : (tensor<4x32xf32>, tensor<128x32xf32>) -> tensor<4x128xf32> {
    ^bb0(%a: tensor<4x32xf32>, %bw: tensor<128x32xf32>):
      %g = npu_graph.gemm %a, %bw {trans_b = true} : (tensor<4x32xf32>, tensor<128x32xf32>) -> tensor<4x128xf32>
      npu_tile.yield %g : tensor<4x128xf32>
    }
    func.return %y : tensor<4x128xf32>
  }
}
// CHECK:      npu_task.task "fc" attributes {core = 0 : i64, range = array<i64: 0, 4>
// CHECK:        %[[A:.*]] = npu_task.sram {offset = 4096 : i64} : memref<4x32xf32, "sram">
// CHECK-NOT:    memref<4x32xf32, "sram">
// CHECK:        %[[TA:.*]] = npu_dma.copy %{{.*}} -> %[[A]]
// CHECK:        scf.for {{.*}} -> (!npu_dma.token, !npu_dma.token) {
// CHECK:          npu_dma.wait %[[TA]]
// CHECK:          npu_compute.matmul %[[A]]
// CHECK:      npu_task.task "fc" attributes {core = 1 : i64, range = array<i64: 4, 8>

// SIM: DRAM bytes:  read 17.00 KB (17408 B), written 2.00 KB (2048 B)
// OFF: DRAM bytes:  read 17.00 KB (17408 B), written 2.00 KB (2048 B)
