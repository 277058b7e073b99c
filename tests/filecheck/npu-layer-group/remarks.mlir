// RUN: %opt %s -p npu-tile,npu-layer-group --remarks -o /dev/null 2>&1 | filecheck %s
// RUN: %opt %s -p npu-tile,npu-layer-group -o /dev/null 2>&1 | filecheck %s --check-prefix=QUIET --allow-empty
// RUN: %opt %s -p 'npu-tile,npu-layer-group{search-budget=0}' --remarks -o /dev/null 2>&1 | filecheck %s --check-prefix=BUDGET

// Remarks of npu-tile (each kernel's tiling) and npu-layer-group (the group formed:
// its predicted cycles against the kernels apart).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>) -> tensor<4x16xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<32x16xf32>} : tensor<32x16xf32>
    %m = npu_graph.matmul %x, %w : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32> loc("fc")
    %r = npu_graph.relu %m : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("act")
    func.return %r : tensor<4x16xf32>
  }
}
// CHECK: remark: npu-tile: applied: [fc] kernel 'fc': tile {'m': 4, 'n': 16, 'k': 32}, grid [1, 1, 1], {{(single|double)}} buffered, {{[0-9]+}} of 524288 SRAM bytes, on 1 core(s): predicted {{[0-9]+}} cycles
// CHECK: remark: npu-tile: applied: [act] kernel 'act':
// CHECK: remark: npu-layer-group: applied: [fc, act] layer group of 2 kernels: predicted {{[0-9]+}} cycles against {{[0-9]+}} apart

// QUIET-NOT: remark

// With the search budget spent from the start, the search narrows to 48-kernel groups
// and says so once; the pair still groups.
// BUDGET: remark: npu-layer-group: missed: [fc] search budget of 0 planned kernels spent: groups ending here and later have at most 48 kernels
// BUDGET-NOT: search budget
// BUDGET: remark: npu-layer-group: applied: [fc, act] layer group of 2 kernels
