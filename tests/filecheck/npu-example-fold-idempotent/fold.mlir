// RUN: %opt %s --split-input-file -p npu-example-fold-idempotent | filecheck %s
// With `ops=relu` only relu is folded.
// RUN: %opt %s --split-input-file -p 'npu-example-fold-idempotent{ops=relu}' | filecheck %s --check-prefix=RELU
// The template pass (lowering/graph/example_fold_idempotent.py): f(f(x)) -> f(x) for an
// idempotent elementwise f; the outer op's users read the inner f(x). CHECK lines made
// with tools/generate_test_checks.py --source fold.mlir --next -i, then trimmed.

// relu(relu(x)) -> relu(x).
// CHECK-LABEL: func.func @relu_twice(
// CHECK-SAME:      %[[X:[a-zA-Z0-9$._-]+]]: tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    %[[A:.*]] = npu_graph.relu %[[X]] : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[A]] : tensor<4x8xf32>
// RELU-LABEL:  func.func @relu_twice(
// RELU:          %[[A:.*]] = npu_graph.relu %{{.*}}
// RELU-NEXT:     func.return %[[A]]
func.func @relu_twice(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = npu_graph.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = npu_graph.relu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %b : tensor<4x8xf32>
}

// -----

// A chain of three folds to one (the greedy driver applies the pattern again); the
// inner op's other user is untouched. Not with `ops=relu`.
// CHECK-LABEL: func.func @abs_chain(
// CHECK-SAME:      %[[X:[a-zA-Z0-9$._-]+]]: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT:    %[[A:.*]] = npu_graph.abs %[[X]] : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %[[N:.*]] = npu_graph.neg %[[A]] : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    func.return %[[A]], %[[N]] : tensor<8xf32>, tensor<8xf32>
// RELU-LABEL:  func.func @abs_chain(
// RELU-COUNT-3:  npu_graph.abs
func.func @abs_chain(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = npu_graph.abs %x : (tensor<8xf32>) -> tensor<8xf32>
  %b = npu_graph.abs %a : (tensor<8xf32>) -> tensor<8xf32>
  %c = npu_graph.abs %b : (tensor<8xf32>) -> tensor<8xf32>
  %n = npu_graph.neg %a : (tensor<8xf32>) -> tensor<8xf32>
  func.return %c, %n : tensor<8xf32>, tensor<8xf32>
}

// -----

// Must not fire: two different functions, and neg (neg(neg(x)) is x, not neg(x)).
// CHECK-LABEL: func.func @not_idempotent(
// CHECK-SAME:      %[[X:[a-zA-Z0-9$._-]+]]: tensor<8xf32>)
// CHECK-NEXT:    %[[A:.*]] = npu_graph.abs %[[X]]
// CHECK-NEXT:    %[[R:.*]] = npu_graph.relu %[[A]]
// CHECK-NEXT:    %[[N:.*]] = npu_graph.neg %[[X]]
// CHECK-NEXT:    %[[M:.*]] = npu_graph.neg %[[N]]
// CHECK-NEXT:    func.return %[[R]], %[[M]]
func.func @not_idempotent(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = npu_graph.abs %x : (tensor<8xf32>) -> tensor<8xf32>
  %r = npu_graph.relu %a : (tensor<8xf32>) -> tensor<8xf32>
  %n = npu_graph.neg %x : (tensor<8xf32>) -> tensor<8xf32>
  %m = npu_graph.neg %n : (tensor<8xf32>) -> tensor<8xf32>
  func.return %r, %m : tensor<8xf32>, tensor<8xf32>
}
