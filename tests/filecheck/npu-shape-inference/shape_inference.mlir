// RUN: %opt %s --split-input-file -p 'npu-shape-inference{input-shapes="x=4x1x8x8"}' | filecheck %s
// RUN: %opt %s --split-input-file -p npu-shape-inference | filecheck %s --check-prefix=SAME
// npu-shape-inference re-types @main's inputs named in `input-shapes` (ONNX names from
// npu.inputs, SSA names or argN) and recomputes every graph op's result type in
// program order, then the signature. Without the option, a consistent module is
// left as it is.

// A LeNet-style network re-typed from batch 1 to batch 4: conv2d (its infer_shape),
// relu and add (broadcasting), maxpool, a flatten reshape (the batch dim follows
// into result dim 0), gemm, softmax (its reference semantics on zeros) and the signature.
func.func @main(%x: tensor<1x1x8x8xf32>) -> tensor<1x3xf32> {
  %w = npu_graph.constant {weight = "w"} : tensor<2x1x3x3xf32>
  %b = npu_graph.constant {value = dense<[[[0.5]], [[-0.5]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %fc = npu_graph.constant {weight = "fc"} : tensor<3x32xf32>
  %c = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x8x8xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x8x8xf32>
  %a = npu_graph.add %c, %b : (tensor<1x2x8x8xf32>, tensor<2x1x1xf32>) -> tensor<1x2x8x8xf32>
  %r = npu_graph.relu %a : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  %f = npu_graph.reshape %p : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
  %g = npu_graph.gemm %f, %fc {trans_b = true} : (tensor<1x32xf32>, tensor<3x32xf32>) -> tensor<1x3xf32>
  %s = npu_graph.softmax %g {axis = 1 : i64} : (tensor<1x3xf32>) -> tensor<1x3xf32>
  func.return %s : tensor<1x3xf32>
}
// CHECK-LABEL: func.func @main(%x: tensor<4x1x8x8xf32>) -> tensor<4x3xf32>
// CHECK:         npu_graph.conv2d {{.*}} -> tensor<4x2x8x8xf32>
// CHECK-NEXT:    npu_graph.add {{.*}} -> tensor<4x2x8x8xf32>
// CHECK-NEXT:    npu_graph.relu {{.*}} -> tensor<4x2x8x8xf32>
// CHECK-NEXT:    npu_graph.maxpool {{.*}} -> tensor<4x2x4x4xf32>
// CHECK-NEXT:    npu_graph.reshape %p : (tensor<4x2x4x4xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    npu_graph.gemm %f, %fc {trans_b = true} : (tensor<4x32xf32>, tensor<3x32xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    npu_graph.softmax %g {axis = 1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %s : tensor<4x3xf32>
// SAME-LABEL:  func.func @main(%x: tensor<1x1x8x8xf32>) -> tensor<1x3xf32>
// SAME:          npu_graph.reshape %p : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
// SAME:          func.return %s : tensor<1x3xf32>

// -----

// The input is named by its ONNX name (npu.inputs); a reshape that merges the batch
// into the next dim ([1, 1, 8, 8] -> [8, 8]) scales that dim; transpose and matmul follow.
func.func @main(%arg0: tensor<1x1x8x8xf32>) -> tensor<8x8xf32> attributes {npu.inputs = ["x"]} {
  %m = npu_graph.reshape %arg0 : (tensor<1x1x8x8xf32>) -> tensor<8x8xf32>
  %t = npu_graph.transpose %m {perm = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = npu_graph.matmul %m, %t : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %y : tensor<8x8xf32>
}
// CHECK-LABEL: func.func @main(%arg0: tensor<4x1x8x8xf32>) -> tensor<32x32xf32>
// CHECK-NEXT:    %m = npu_graph.reshape %arg0 : (tensor<4x1x8x8xf32>) -> tensor<32x8xf32>
// CHECK-NEXT:    %t = npu_graph.transpose %m {perm = array<i64: 1, 0>} : (tensor<32x8xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %y = npu_graph.matmul %m, %t : (tensor<32x8xf32>, tensor<8x32xf32>) -> tensor<32x32xf32>

// -----

// A fused kernel: its body and results follow its operands.
func.func @main(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32> {
  %c = npu_graph.constant {value = dense<1.0> : tensor<1xf32>} : tensor<1xf32>
  %k = npu_graph.fused(%x, %c) {kernel = "k", rule = "eltwise-chain"} : (tensor<1x1x8x8xf32>, tensor<1xf32>) -> tensor<1x1x8x8xf32> {
  ^bb0(%p: tensor<1x1x8x8xf32>, %q: tensor<1xf32>):
    %s = npu_graph.add %p, %q : (tensor<1x1x8x8xf32>, tensor<1xf32>) -> tensor<1x1x8x8xf32>
    %r = npu_graph.relu %s : (tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32>
    npu_graph.yield %r : tensor<1x1x8x8xf32>
  }
  func.return %k : tensor<1x1x8x8xf32>
}
// CHECK-LABEL: func.func @main(%x: tensor<4x1x8x8xf32>) -> tensor<4x1x8x8xf32>
// CHECK-NEXT:    %c = npu_graph.constant
// CHECK-NEXT:    %k = npu_graph.fused(%x, %c) {{.*}} : (tensor<4x1x8x8xf32>, tensor<1xf32>) -> tensor<4x1x8x8xf32> {
// CHECK-NEXT:    ^{{.*}}(%p: tensor<4x1x8x8xf32>, %q: tensor<1xf32>):
// CHECK-NEXT:      %s = npu_graph.add %p, %q : (tensor<4x1x8x8xf32>, tensor<1xf32>) -> tensor<4x1x8x8xf32>
// CHECK-NEXT:      %r = npu_graph.relu %s : (tensor<4x1x8x8xf32>) -> tensor<4x1x8x8xf32>
// CHECK-NEXT:      npu_graph.yield %r : tensor<4x1x8x8xf32>

// -----

// A slice that took a whole dim (as the importer writes Split) takes the whole new
// batch; the slice along the last dim keeps its bounds.
func.func @main(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x8x4xf32> {
  %a = npu_graph.slice %x {starts = array<i64: 0, 0, 0, 4>, ends = array<i64: 1, 1, 8, 8>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x8x4xf32>
  func.return %a : tensor<1x1x8x4xf32>
}
// CHECK-LABEL: func.func @main(%x: tensor<4x1x8x8xf32>) -> tensor<4x1x8x4xf32>
// CHECK-NEXT:    npu_graph.slice %x {starts = array<i64: 0, 0, 0, 4>, ends = array<i64: 4, 1, 8, 8>, steps = array<i64: 1, 1, 1, 1>} : (tensor<4x1x8x8xf32>) -> tensor<4x1x8x4xf32>
