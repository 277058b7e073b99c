// `--verify-diagnostics` with passes: a pass's error at the op it names (located through
// the op's source position, or its ONNX node when the pass built the op), an error at no
// op (`@unknown`), and with --remarks each remark at the first op of its ONNX nodes.
// RUN: %opt %s --split-input-file --verify-diagnostics -p 'npu-shape-inference{input-shapes="x=3x5"}' -o /dev/null
// RUN: %opt %S/Inputs/remarks.mlir --verify-diagnostics -p npu-fuse --remarks -o /dev/null 2>&1 | filecheck %s --allow-empty --check-prefix=QUIET
// Without --remarks, remarks are no diagnostics (the annotations are unmet):
// RUN: not npu-opt %S/Inputs/remarks.mlir --verify-diagnostics -p npu-fuse -o /dev/null 2>&1 | filecheck %s --check-prefix=NOREMARKS
// QUIET-NOT: {{.}}
// NOREMARKS: remarks.mlir:[[#]]:{{[0-9]+}}: error: expected remark "applied: [fc, bias] matmul-epilogue" at line [[#]] was not produced

func.func @main(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = npu_graph.constant {weight = "fc.weight"} : tensor<8x4xf32>
  // expected-error @+1 {{npu-shape-inference: cannot take operand shapes [3, 5], [8, 4]: inner dimensions differ (5 vs 8)}}
  %y = npu_graph.gemm %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32> loc("/fc/Gemm")
  func.return %y : tensor<2x4xf32>
}

// -----

// expected-error @unknown {{input-shapes: @main has no input 'x'}}
func.func @main(%y: tensor<2x8xf32>) -> tensor<2x8xf32> {
  func.return %y : tensor<2x8xf32>
}
