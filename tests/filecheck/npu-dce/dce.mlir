// RUN: %opt %s --split-input-file -p npu-dce | filecheck %s
// npu-dce removes graph ops whose results nobody uses, whole dead chains at once.

// Dead constants and a dead branch (relu -> add) go; what the return needs stays.
// CHECK-LABEL: func.func @dead_branch
// CHECK-NEXT:    %w = npu_graph.constant {weight = "w"}
// CHECK-NEXT:    %y = npu_graph.matmul %x, %w
// CHECK-NEXT:    func.return %y
func.func @dead_branch(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = npu_graph.constant {weight = "w"} : tensor<8x4xf32>
  %unused = npu_graph.constant {weight = "old"} : tensor<8x4xf32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<1xf32>} : tensor<1xf32>
  %r = npu_graph.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %a = npu_graph.add %r, %one : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %y = npu_graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// -----

// Inside a fused kernel, an op the yield does not need goes; a kernel whose result
// is unused goes as a whole.
// CHECK-LABEL: func.func @fused
// CHECK-NEXT:    %k = npu_graph.fused(%x)
// CHECK-NEXT:    ^{{.*}}(%p: tensor<4xf32>):
// CHECK-NEXT:      %r = npu_graph.relu %p
// CHECK-NEXT:      npu_graph.yield %r
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %k
func.func @fused(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k = npu_graph.fused(%x) {kernel = "k", rule = "eltwise-chain"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%p: tensor<4xf32>):
    %d = npu_graph.mul %p, %p : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = npu_graph.relu %p : (tensor<4xf32>) -> tensor<4xf32>
    npu_graph.yield %r : tensor<4xf32>
  }
  %dead = npu_graph.fused(%x) {kernel = "dead", rule = "eltwise-chain"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%q: tensor<4xf32>):
    %s = npu_graph.relu %q : (tensor<4xf32>) -> tensor<4xf32>
    npu_graph.yield %s : tensor<4xf32>
  }
  func.return %k : tensor<4xf32>
}

// -----

// Does not fire: everything is used (also through several results of the return),
// and unused function arguments stay (they are the model's inputs).
// CHECK-LABEL: func.func @all_live(%x: tensor<4xf32>, %unused: tensor<4xf32>)
// CHECK-NEXT:    %r = npu_graph.relu %x
// CHECK-NEXT:    %s = npu_graph.add %r, %x
// CHECK-NEXT:    func.return %r, %s
func.func @all_live(%x: tensor<4xf32>, %unused: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %s = npu_graph.add %r, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r, %s : tensor<4xf32>, tensor<4xf32>
}

// -----

// Does not fire: an op with unknown effects (a call) stays although its result is unused.
builtin.module {
  func.func private @ext(tensor<4xf32>) -> tensor<4xf32>
  func.func @call(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = func.call @ext(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %x : tensor<4xf32>
  }
}
// CHECK-LABEL: func.func @call
// CHECK-NEXT:    %a = func.call @ext(%x)
// CHECK-NEXT:    func.return %x
