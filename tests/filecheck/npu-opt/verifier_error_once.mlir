// A verifier error is printed once, as a located diagnostic (the op's line and a caret),
// never followed by xDSL's generic dump of the whole module - with or without xDSL's
// --verify-diagnostics (an input without expected-* annotations: the error on stdout, exit 0).
// RUN: not npu-opt %s 2>&1 | filecheck %s
// RUN: npu-opt %s --verify-diagnostics | filecheck %s

func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  %0 = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}
// CHECK:      verifier_error_once.mlir:8:3: error: 'npu_graph.conv2d': input has 3 channels but weight expects 2 x group 1
// CHECK-NEXT:   %0 = npu_graph.conv2d %x, %w
// CHECK-NEXT:   ^^
// CHECK-NOT:  {{.}}
