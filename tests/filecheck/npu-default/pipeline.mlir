// RUN: %opt %s -p npu-default | filecheck %s
// RUN: %opt %s -p 'npu-default{disable=npu-fuse,npu-layer-group}' | filecheck %s --check-prefix=NOFUSE
// RUN: %opt %s -p 'npu-default{disable=npu-fuse}' | filecheck %s --check-prefix=GROUP
// RUN: %opt %s -p 'npu-default{disable=npu-fuse fuse-disable=layer-group}' | filecheck %s --check-prefix=NOFUSE
// RUN: not npu-opt %s -p 'npu-default{disable=npu-nothing}' 2>&1 | filecheck %s --check-prefix=ERR

// The whole pipeline on a gemm + relu: one fused kernel becomes one task on a
// core, with DRAM offsets planned and the model's work recorded.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>) -> tensor<4x16xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<16x32xf32>} : tensor<16x32xf32>
    %g = npu_graph.gemm %x, %w {trans_b = true} : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32> loc("fc")
    %r = npu_graph.relu %g : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("act")
    func.return %r : tensor<4x16xf32>
  }
}
// CHECK:      builtin.module attributes {
// CHECK-SAME:   npu.model_macs = 2048 : i64
// CHECK-SAME:   npu.dram_weights_bytes = 2048 : i64
// CHECK:      func.func @main(%{{.*}}: memref<4x32xf32, "dram">, %{{.*}}: memref<4x16xf32, "dram">)
// CHECK:        npu_task.weight "inline1" {{.*}}offset = 0 : i64
// CHECK:        npu_task.task "fc" attributes {core = 0 : i64, range = array<i64: 0, 1>
// CHECK:          npu_compute.matmul
// CHECK:          npu_compute.eltwise relu
// CHECK-NOT:  npu_task.task
// CHECK:        func.return

// Without fusion and layer groups the relu is its own kernel, reading the gemm's result from DRAM
// (also when the rule layer-group is switched off with npu-fuse itself disabled: npu-default records it).
// NOFUSE:     npu_task.alloc {offset = 0 : i64} : memref<4x16xf32, "dram">
// NOFUSE:     npu_task.task "fc"
// NOFUSE-NOT:   npu_compute.eltwise
// NOFUSE:     npu_task.task "act"
// NOFUSE:       npu_compute.eltwise relu

// Without fusion, npu-layer-group still keeps the gemm's result on chip: one task,
// whole tensors in SRAM, no DRAM activation buffer.
// GROUP:      npu.dram_arena_bytes = 0 : i64
// GROUP-NOT:  npu_task.alloc
// GROUP:      npu_task.task "fc..act"
// GROUP:        npu_compute.matmul
// GROUP:        npu_compute.eltwise relu
// GROUP:        npu_dma.copy {{.*}} -> memref<4x16xf32, "dram">
// GROUP-NOT:  npu_task.task

// ERR: error: npu-default: cannot disable unknown pass(es) npu-nothing
