// RUN: not npu-opt %s -p 'npu-apply-patterns{file=%S/Inputs/relu_to_relu_forever.pdl.mlir}' 2>&1 | filecheck %s --check-prefix=SAME
// RUN: not npu-opt %s -p 'npu-apply-patterns{file=%S/Inputs/abs_neg_undo.pdl.mlir}' 2>&1 | filecheck %s --check-prefix=UNDO
// RUN: not npu-opt %s -p 'npu-apply-patterns{file=%S/Inputs/abs_neg_undo.pdl.mlir}' --pattern-stats 2>&1 | filecheck %s --check-prefix=UNDO
// RUN: %opt %s -p 'npu-apply-patterns{file=%S/../../../examples/patterns/abs_of_neg.pdl.mlir}' | filecheck %s --check-prefix=CONVERGES

// A rewrite that always matches what it creates (relu -> the same relu), or two that
// undo each other, would run forever: the greedy walk stops after 64 rewrites per op
// (or 10 walks that change the IR) with an error naming the pass and the patterns
// still firing, as MLIR's greedy driver does with its iteration limit.
builtin.module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %a = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    %n = npu_graph.neg %a : (tensor<4xf32>) -> tensor<4xf32>
    %y = npu_graph.abs %n : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}
// SAME: error: npu-apply-patterns: the rewrites did not converge: 384 rewrites in one walk over the IR (64 per op); patterns still firing: relu_forever (32x in 32 rewrites)
// SAME-NOT: Traceback
// UNDO: error: npu-apply-patterns: the rewrites did not converge: {{[0-9]+}} rewrites in one walk over the IR (64 per op); patterns still firing: {{(abs_to_neg \(16x.*neg_to_abs \(16x|neg_to_abs \(16x.*abs_to_neg \(16x)}}

// The patterns that converge are applied as before: abs(neg(x)) -> abs(x).
// CONVERGES:      %[[R:.*]] = npu_graph.relu %x
// CONVERGES-NEXT: %[[Y:.*]] = npu_graph.abs %[[R]]
// CONVERGES-NEXT: func.return %[[Y]]
