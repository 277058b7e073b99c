// RUN: %opt %s -p 'npu-convert-precision{type=f16}' --weights-file %t.weights.npz | filecheck %s
// RUN: %opt %s -p 'npu-convert-precision{type=f16}' --weights-file %t.weights.npz --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// A decode step's KV cache: the past keys come in as f32 and their concatenation with
// the new step's key goes out as f32, read by the scores' product. Converted, each
// would need a cast pass over the cache on the way in and one on the way out: the ops
// whose f32 interface tensors outweigh the rest of what they touch stay f32 (the
// concat: 32 cache elements in and 36 out against the new row's 4; the transpose and
// the product reading it, and the softmax tying with its f32 operand), and the casts
// move to the small tensors: the new key row in, the probabilities out to the
// weight's product, which converts (its weight outweighs them), as does the new key's.
builtin.module {
  func.func @main(%past: tensor<1x8x4xf32>, %k: tensor<1x1x4xf32>, %q: tensor<1x1x4xf32>) -> (tensor<1x9x4xf32>, tensor<1x1x16xf32>) {
    %w = npu_graph.constant {value = dense<0.5> : tensor<9x16xf32>} : tensor<9x16xf32>
    %wk = npu_graph.constant {value = dense<0.25> : tensor<4x4xf32>} : tensor<4x4xf32>
    %kk = npu_graph.matmul %k, %wk : (tensor<1x1x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4xf32>
    %present = npu_graph.concat %past, %kk {axis = 1 : i64} : (tensor<1x8x4xf32>, tensor<1x1x4xf32>) -> tensor<1x9x4xf32>
    %kt = npu_graph.transpose %present {perm = array<i64: 0, 2, 1>} : (tensor<1x9x4xf32>) -> tensor<1x4x9xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x1x4xf32>, tensor<1x4x9xf32>) -> tensor<1x1x9xf32>
    %p = npu_graph.softmax %s {axis = 2 : i64} : (tensor<1x1x9xf32>) -> tensor<1x1x9xf32>
    %o = npu_graph.matmul %p, %w : (tensor<1x1x9xf32>, tensor<9x16xf32>) -> tensor<1x1x16xf32>
    func.return %present, %o : tensor<1x9x4xf32>, tensor<1x1x16xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %w = npu_graph.constant {{.*}} : tensor<9x16xf16>
// CHECK:       %kk = npu_graph.matmul %{{.*}}, %wk : (tensor<1x1x4xf16>, tensor<4x4xf16>) -> tensor<1x1x4xf16>
// CHECK-NEXT:  %[[KK:.*]] = npu_graph.cast %kk : (tensor<1x1x4xf16>) -> tensor<1x1x4xf32>
// CHECK-NEXT:  %present = npu_graph.concat %past, %[[KK]] {axis = 1 : i64} : (tensor<1x8x4xf32>, tensor<1x1x4xf32>) -> tensor<1x9x4xf32>
// CHECK-NEXT:  %kt = npu_graph.transpose %present {{.*}} : (tensor<1x9x4xf32>) -> tensor<1x4x9xf32>
// CHECK-NEXT:  %s = npu_graph.matmul %q, %kt : (tensor<1x1x4xf32>, tensor<1x4x9xf32>) -> tensor<1x1x9xf32>
// CHECK-NEXT:  %p = npu_graph.softmax %s {axis = 2 : i64} : (tensor<1x1x9xf32>) -> tensor<1x1x9xf32>
// CHECK-NEXT:  %[[P:.*]] = npu_graph.cast %p : (tensor<1x1x9xf32>) -> tensor<1x1x9xf16>
// CHECK-NEXT:  %o = npu_graph.matmul %[[P]], %w : (tensor<1x1x9xf16>, tensor<9x16xf16>) -> tensor<1x1x16xf16>
// CHECK-NEXT:  %[[O:.*]] = npu_graph.cast %o : (tensor<1x1x16xf16>) -> tensor<1x1x16xf32>
// CHECK-NEXT:  func.return %present, %[[O]] : tensor<1x9x4xf32>, tensor<1x1x16xf32>
// CHECK-NOT:   npu_graph.cast %past

// REMARK-DAG: remark: npu-convert-precision: missed: [] kept in f32: it touches 68 elements of the function's f32 arguments and results against 4 others (a cast pass over them would cost more than it saves)
// REMARK-DAG: remark: npu-convert-precision: missed: [] kept in f32: it touches 36 elements of the function's f32 arguments and results against 36 others (a cast pass over them would cost more than it saves)
// REMARK-DAG: remark: npu-convert-precision: missed: [] kept in f32: it touches 40 elements of the function's f32 arguments and results against 9 others (a cast pass over them would cost more than it saves)
// REMARK-DAG: remark: npu-convert-precision: applied: [] 2 ops of @main computed in f16
