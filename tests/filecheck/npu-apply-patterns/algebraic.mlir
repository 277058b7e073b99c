// RUN: npu-opt %s --print-debuginfo -p 'npu-apply-patterns{file=%S/../../../examples/patterns/abs_of_neg.pdl.mlir}' | filecheck %s
// RUN: %opt %s -p 'npu-apply-patterns{file=%S/../../../examples/patterns/abs_of_neg.pdl.mlir}' --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// The algebraic example (examples/patterns/abs_of_neg.pdl.mlir): abs(neg(x)) reads x,
// keeping the abs's location; a neg read by something else stays, and an abs of
// anything but a neg is left alone.
builtin.module {
  func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) attributes {npu.inputs = ["x", "y"], npu.outputs = ["a", "b", "c"]} {
    %n = npu_graph.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("neg")
    %a = npu_graph.abs %n : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("abs")
    %m = npu_graph.neg %y : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("neg2")
    %b = npu_graph.abs %m : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("abs2")
    %s = npu_graph.sigmoid %m : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("sig")
    %c = npu_graph.abs %s : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("abs3")
    func.return %a, %b, %c : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}
// CHECK:      func.func @main(%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>)
// CHECK-NOT:  npu_graph.neg %[[X]]
// CHECK:      %[[A:.*]] = npu_graph.abs %[[X]] : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("abs")
// CHECK:      %[[M:.*]] = npu_graph.neg %[[Y]]
// CHECK:      %[[B:.*]] = npu_graph.abs %[[Y]] {{.*}} loc("abs2")
// CHECK:      %[[S:.*]] = npu_graph.sigmoid %[[M]]
// CHECK:      %[[C:.*]] = npu_graph.abs %[[S]] {{.*}} loc("abs3")
// CHECK:      func.return %[[A]], %[[B]], %[[C]]

// REMARK: remark: npu-apply-patterns: applied: [abs] pattern 'abs_of_neg' rewrote 'npu_graph.abs'
// REMARK: remark: npu-apply-patterns: applied: [abs2] pattern 'abs_of_neg' rewrote 'npu_graph.abs'
// REMARK-NOT: abs3
