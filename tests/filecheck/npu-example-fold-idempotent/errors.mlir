// A function that is not idempotent is the pass's own error (exit 1), naming the known ones.
// RUN: not npu-opt %s -p 'npu-example-fold-idempotent{ops=relu,exp}' 2>&1 | filecheck %s --check-prefix=NOT-IDEMPOTENT
// NOT-IDEMPOTENT: error: npu-example-fold-idempotent: ops: 'exp' is not idempotent (the idempotent functions: relu, abs, floor, ceil, round, trunc, sign)
// A misspelt option is a usage error (exit 2) from npu-opt, listing the pass's options.
// RUN: not npu-opt %s -p 'npu-example-fold-idempotent{op=relu}' 2>&1 | filecheck %s --check-prefix=NO-OPTION
// NO-OPTION:      error: pass 'npu-example-fold-idempotent' has no option 'op'
// NO-OPTION-NEXT: hint: its options: ops

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = npu_graph.relu %x : (tensor<8xf32>) -> tensor<8xf32>
  func.return %a : tensor<8xf32>
}
