// RUN: %opt %s -p 'npu-default{disable=npu-fuse}' | filecheck %s
// RUN: %opt %s -p 'npu-default{disable=npu-fuse group-max-kernels=2}' | filecheck %s --check-prefix=TWO
// RUN: not npu-opt %s -p 'npu-default{group-max-kernels=1}' 2>&1 | filecheck %s --check-prefix=ERR

// `group-max-kernels` is npu-layer-group's `max-kernels`: the fusion depth `npu-dse
// --fusion-depth` sweeps. Three unfused kernels form one layer group by default, and
// at most two-kernel groups with the option set to 2.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>) -> tensor<4x16xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<16x32xf32>} : tensor<16x32xf32>
    %g = npu_graph.gemm %x, %w {trans_b = true} : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32> loc("fc")
    %r = npu_graph.relu %g : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("act")
    %s = npu_graph.sigmoid %r : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("gate")
    func.return %s : tensor<4x16xf32>
  }
}
// CHECK:      npu_task.task "fc..gate"
// CHECK-NOT:  npu_task.task

// TWO:        npu_task.task "fc..act"
// TWO:        npu_task.task "gate"
// TWO-NOT:    npu_task.task

// ERR: error: npu-layer-group: max-kernels must be at least 2, got 1
