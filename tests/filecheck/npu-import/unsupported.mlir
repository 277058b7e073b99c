// Every offending node gets one line naming the model file, the node, its op type and
// opset; hints follow; nothing is written and the exit code is non-zero.
// RUN: not npu-import %S/Inputs/unsupported.onnx -o %t.mlir 2>&1 | filecheck %s
// RUN: not ls %t.mlir
// RUN: not npu-import %S/Inputs/symbolic.onnx 2>&1 | filecheck %s --check-prefix=SYMBOLIC
// RUN: not npu-import %S/Inputs/mlp.onnx --arch default,cores=0 2>&1 | filecheck %s --check-prefix=ARCH
// RUN: not npu-import %S/Inputs/no-such-model.onnx 2>&1 | filecheck %s --check-prefix=MISSING

// CHECK-NOT:  Traceback
// CHECK:      unsupported.onnx: error: node 'odd_node' (RandomNormalLike, opset 17): unsupported operator
// CHECK-NEXT: unsupported.onnx: error: node 'pad' (Pad, opset 17): unsupported attribute mode=symmetric
// CHECK-NEXT: hint: this importer converts {{[0-9]+}} ONNX op types (domain ai.onnx) at opsets 7..{{[0-9]+}}
// CHECK-NOT:  error

// SYMBOLIC: error: symbolic dimension 'batch' in input 'x' is not bound; compile for chosen sizes with --shape-buckets batch=N[,N...]

// ARCH: error: --arch 'default,cores=0': arch parameter 'cores' must be a positive integer, got 0

// MISSING: no-such-model.onnx: error: cannot read the ONNX model: no such file
