// RUN: %opt %s -p 'npu-apply-patterns{file=%S/../../../examples/patterns/fuse_add_sigmoid.pdl.mlir}' | filecheck %s
// RUN: %opt %s -p 'npu-apply-patterns{file=%S/../../../examples/patterns/fuse_add_sigmoid.pdl.mlir},npu-default{fuse-disable=layer-group}' | filecheck %s --check-prefix=TASKS
// RUN: %opt %s -p 'npu-apply-patterns{file=%S/../../../examples/patterns/fuse_add_sigmoid.pdl.mlir}' --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// The fusion-rule example (examples/patterns/fuse_add_sigmoid.pdl.mlir): an add read
// only by a sigmoid becomes one npu_graph.fused kernel of rule `pdl`, which the rest of
// npu-default compiles into one task (layer groups off, so it stays alone); an add with a second reader is not fused.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) attributes {npu.inputs = ["x", "y"], npu.outputs = ["a", "b", "c"]} {
    %s = npu_graph.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("add")
    %a = npu_graph.sigmoid %s : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("sig")
    %t = npu_graph.add %y, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("add2")
    %b = npu_graph.sigmoid %t : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("sig2")
    %c = npu_graph.neg %t : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("neg")
    func.return %a, %b, %c : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}
// CHECK:      %[[A:.*]] = npu_graph.fused(%[[X:.*]], %[[Y:.*]]) {kernel = "add", rule = "pdl"}
// CHECK-NEXT: ^{{.*}}(%[[P:.*]]: tensor<4x8xf32>, %[[Q:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:   %[[S:.*]] = npu_graph.add %[[P]], %[[Q]]
// CHECK-NEXT:   %[[R:.*]] = npu_graph.sigmoid %[[S]]
// CHECK-NEXT:   npu_graph.yield %[[R]]
// CHECK:      %[[T:.*]] = npu_graph.add %[[Y]], %[[Y]]
// CHECK-NEXT: npu_graph.sigmoid %[[T]]
// CHECK-NEXT: npu_graph.neg %[[T]]

// TASKS:      npu_task.task "add" attributes
// TASKS-NOT:  npu_task.task
// TASKS:        npu_compute.eltwise add
// TASKS-NEXT:   npu_compute.eltwise sigmoid

// REMARK:      remark: npu-apply-patterns: applied: [add, sig] pdl: 2 ops (add, sigmoid) as one kernel
// REMARK-NEXT: remark: npu-apply-patterns: applied: [sig] pattern 'fuse_add_sigmoid' rewrote 'npu_graph.sigmoid'
// REMARK-NOT:  add2
