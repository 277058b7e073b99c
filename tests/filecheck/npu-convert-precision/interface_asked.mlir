// RUN: %opt %s -p 'npu-convert-precision{type=f16}' | filecheck %s

// Must not fire: a type asked for by node (`npu.precision`) is kept even where the
// interface rule would keep the op f32 - "cat" is asked in f16, so the cache is cast
// in and its concatenation out. The unnamed transpose of the concatenation, returned
// too, ties (36 elements out, 36 in) at the edge: it converts, cast on its way out.
builtin.module attributes {npu.precision = {"cat" = "f16"}} {
  func.func @main(%past: tensor<1x8x4xf32>, %k: tensor<1x1x4xf32>) -> (tensor<1x9x4xf32>, tensor<1x4x9xf32>) {
    %present = npu_graph.concat %past, %k {axis = 1 : i64} : (tensor<1x8x4xf32>, tensor<1x1x4xf32>) -> tensor<1x9x4xf32> loc("cat")
    %kt = npu_graph.transpose %present {perm = array<i64: 0, 2, 1>} : (tensor<1x9x4xf32>) -> tensor<1x4x9xf32>
    func.return %present, %kt : tensor<1x9x4xf32>, tensor<1x4x9xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-DAG:   %[[P:.*]] = npu_graph.cast %past : (tensor<1x8x4xf32>) -> tensor<1x8x4xf16>
// CHECK-DAG:   %[[K:.*]] = npu_graph.cast %k : (tensor<1x1x4xf32>) -> tensor<1x1x4xf16>
// CHECK:       %present = npu_graph.concat %[[P]], %[[K]] {axis = 1 : i64} : (tensor<1x8x4xf16>, tensor<1x1x4xf16>) -> tensor<1x9x4xf16>
// CHECK-NEXT:  %[[F:.*]] = npu_graph.cast %present : (tensor<1x9x4xf16>) -> tensor<1x9x4xf32>
// CHECK-NEXT:  %kt = npu_graph.transpose %present {{.*}} : (tensor<1x9x4xf16>) -> tensor<1x4x9xf16>
// CHECK-NEXT:  %[[T:.*]] = npu_graph.cast %kt : (tensor<1x4x9xf16>) -> tensor<1x4x9xf32>
// CHECK-NEXT:  func.return %[[F]], %[[T]]
