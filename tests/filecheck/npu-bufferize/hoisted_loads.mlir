// RUN: %opt %s -p npu-default | filecheck %s
// RUN: %opt %s -p 'npu-default{disable=npu-task-canonicalize}' | filecheck %s --check-prefix=OFF
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// In npu-default: on one core npu-tile splits this gemm's weights in two tiles along n
// without double buffering, and the activation's window does not move: its load
// leaves the tile loop (4 KB less read), the result still matches the numpy
// reference (the run uses the memory sanitizer, NPU_SANITIZE=1 in lit).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x256xf32>) -> tensor<4x512xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.01> : tensor<512x256xf32>} : tensor<512x256xf32>
    %b = npu_graph.constant {value = dense<0.5> : tensor<512xf32>} : tensor<512xf32>
    %g = npu_graph.gemm %x, %w, %b {trans_b = true} : (tensor<4x256xf32>, tensor<512x256xf32>, tensor<512xf32>) -> tensor<4x512xf32> loc("fc")
    %r = npu_graph.relu %g : (tensor<4x512xf32>) -> tensor<4x512xf32> loc("act")
    func.return %r : tensor<4x512xf32>
  }
}
// CHECK:      npu_task.task "fc"
// CHECK:        %[[A:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x256xf32, "sram">
// CHECK:        %[[T:.*]] = npu_dma.copy %{{.*}} -> %[[A]]
// CHECK-NEXT:   scf.for
// CHECK-NOT:      -> %[[A]]
// CHECK:          npu_dma.wait %[[T]]

// OFF:        npu_task.task "fc"
// OFF:          %[[A:.*]] = npu_task.sram {offset = 0 : i64} : memref<4x256xf32, "sram">
// OFF:          scf.for
// OFF:            npu_dma.copy %{{.*}} -> %[[A]]

// SIM: DRAM bytes:  read 518.00 KB (530432 B), written 8.00 KB (8192 B)
// SIM: check:       ok vs numpy float64 reference
