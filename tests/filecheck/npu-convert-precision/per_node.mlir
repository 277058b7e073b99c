// RUN: %opt %s -p 'npu-convert-precision{type=f32}' | filecheck %s
// RUN: %opt %s -p 'npu-convert-precision{type=f16}' | filecheck %s --check-prefix=GLOBAL
// RUN: %opt %s -p 'npu-convert-precision{type=f32}' --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// Per node (`npu.precision`, what the ONNX importer makes of a node's metadata_props
// entry): the ops located at "mm" and "r" compute in bf16, "n" in f16, "e" (not named)
// and "keep" (named f32) stay f32. The weight read only by "mm" is converted at compile
// time, the mean of "mean" stays f32 (a sum) between casts, a value crosses from bf16
// to f16 by one cast and back to f32 where an f32 op reads it.
builtin.module attributes {npu.precision = {"mm" = "bf16", "r" = "bf16", "n" = "f16", "mean" = "bf16", "keep" = "f32"}} {
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x1xf32> {
    %w = npu_graph.constant {value = dense<[[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]]> : tensor<4x2xf32>} : tensor<4x2xf32> loc("mm")
    %y = npu_graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("mm")
    %r = npu_graph.relu %y : (tensor<2x2xf32>) -> tensor<2x2xf32> loc("r")
    %n = npu_graph.neg %r : (tensor<2x2xf32>) -> tensor<2x2xf32> loc("n")
    %e = npu_graph.exp %n : (tensor<2x2xf32>) -> tensor<2x2xf32> loc("e")
    %k = npu_graph.abs %e : (tensor<2x2xf32>) -> tensor<2x2xf32> loc("keep")
    %m = npu_graph.reduce_mean %k {axes = array<i64: 1>, keepdims = true} : (tensor<2x2xf32>) -> tensor<2x1xf32> loc("mean")
    func.return %m : tensor<2x1xf32>
  }
}
// CHECK-LABEL: func.func @main(%x: tensor<2x4xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  %[[X:.*]] = npu_graph.cast %x : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// CHECK-NEXT:  %w = npu_graph.constant {value = dense<{{.*}}> : tensor<4x2xbf16>} : tensor<4x2xbf16>
// CHECK-NEXT:  %y = npu_graph.matmul %[[X]], %w : (tensor<2x4xbf16>, tensor<4x2xbf16>) -> tensor<2x2xbf16>
// CHECK-NEXT:  %r = npu_graph.relu %y : (tensor<2x2xbf16>) -> tensor<2x2xbf16>
// CHECK-NEXT:  %[[R:.*]] = npu_graph.cast %r : (tensor<2x2xbf16>) -> tensor<2x2xf16>
// CHECK-NEXT:  %n = npu_graph.neg %[[R]] : (tensor<2x2xf16>) -> tensor<2x2xf16>
// CHECK-NEXT:  %[[N:.*]] = npu_graph.cast %n : (tensor<2x2xf16>) -> tensor<2x2xf32>
// CHECK-NEXT:  %e = npu_graph.exp %[[N]] : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:  %k = npu_graph.abs %e : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:  %m = npu_graph.reduce_mean %k {{.*}} : (tensor<2x2xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:  func.return %m : tensor<2x1xf32>

// With a global type the named nodes keep theirs (bf16, f16, and f32 for "keep"), the
// others take it: "e" computes in f16.
// GLOBAL-LABEL: func.func @main
// GLOBAL:       %y = npu_graph.matmul {{.*}} -> tensor<2x2xbf16>
// GLOBAL:       %n = npu_graph.neg {{.*}} -> tensor<2x2xf16>
// GLOBAL-NEXT:  %e = npu_graph.exp %n : (tensor<2x2xf16>) -> tensor<2x2xf16>
// GLOBAL-NEXT:  %[[E:.*]] = npu_graph.cast %e : (tensor<2x2xf16>) -> tensor<2x2xf32>
// GLOBAL-NEXT:  %k = npu_graph.abs %[[E]] : (tensor<2x2xf32>) -> tensor<2x2xf32>

// REMARK-DAG: remark: npu-convert-precision: missed: [mean] kept in f32: a mean is a sum, which tiles would accumulate in the result's type
// REMARK-DAG: remark: npu-convert-precision: applied: [mm, r] 2 ops of @main computed in bf16
// REMARK-DAG: remark: npu-convert-precision: applied: [n] 1 ops of @main computed in f16
