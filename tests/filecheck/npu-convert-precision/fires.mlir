// RUN: %opt %s -p 'npu-convert-precision{type=f16}' | filecheck %s
// RUN: %opt %s -p 'npu-convert-precision{type=bf16}' | filecheck %s --check-prefix=BF16

// A float32 function computes in f16: its argument and result keep f32 through a cast
// at entry and exit, the weight is converted at compile time (rounded to nearest even),
// the matmul and the activation take and give f16; softmax is converted (its row
// statistics stay f32 inside the kernel); a mean reads the f16 values and sums them in
// f32 (a widening reduction: no f32 copy of its input), its f32 result cast back.
builtin.module {
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
    %w = npu_graph.constant {value = dense<[[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]]> : tensor<4x2xf32>} : tensor<4x2xf32>
    %y = npu_graph.matmul %x, %w : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
    %r = npu_graph.relu %y : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %s = npu_graph.softmax %r {axis = 1 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %m = npu_graph.reduce_mean %s {axes = array<i64: 1>, keepdims = true} : (tensor<2x2xf32>) -> tensor<2x1xf32>
    %n = npu_graph.neg %m : (tensor<2x1xf32>) -> tensor<2x1xf32>
    %z = npu_graph.add %n, %y : (tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    func.return %z : tensor<2x2xf32>
  }
}
// CHECK-LABEL: func.func @main(%x: tensor<2x4xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:  %[[X:.*]] = npu_graph.cast %x : (tensor<2x4xf32>) -> tensor<2x4xf16>
// CHECK-NEXT:  %w = npu_graph.constant {value = dense<{{\[}}[9.997560e-02, 1.999510e-01], [3.000490e-01, 3.999020e-01], [5.000000e-01, 6.000980e-01], [7.001950e-01, 7.998050e-01]]> : tensor<4x2xf16>} : tensor<4x2xf16>
// CHECK-NEXT:  %y = npu_graph.matmul %[[X]], %w : (tensor<2x4xf16>, tensor<4x2xf16>) -> tensor<2x2xf16>
// CHECK-NEXT:  %r = npu_graph.relu %y : (tensor<2x2xf16>) -> tensor<2x2xf16>
// CHECK-NEXT:  %s = npu_graph.softmax %r {axis = 1 : i64} : (tensor<2x2xf16>) -> tensor<2x2xf16>
// CHECK-NEXT:  %m = npu_graph.reduce_mean %s {{.*}} : (tensor<2x2xf16>) -> tensor<2x1xf32>
// CHECK-NEXT:  %[[M:.*]] = npu_graph.cast %m : (tensor<2x1xf32>) -> tensor<2x1xf16>
// CHECK-NEXT:  %n = npu_graph.neg %[[M]] : (tensor<2x1xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  %z = npu_graph.add %n, %y : (tensor<2x1xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
// CHECK-NEXT:  %[[Z:.*]] = npu_graph.cast %z : (tensor<2x2xf16>) -> tensor<2x2xf32>
// CHECK-NEXT:  func.return %[[Z]] : tensor<2x2xf32>

// BF16:       npu_graph.cast %x : (tensor<2x4xf32>) -> tensor<2x4xbf16>
// BF16:       %w = npu_graph.constant {value = dense<{{.*}}> : tensor<4x2xbf16>} : tensor<4x2xbf16>
// BF16:       npu_graph.matmul {{.*}} : (tensor<2x4xbf16>, tensor<4x2xbf16>) -> tensor<2x2xbf16>

// The remarks name what runs in f16 and what stays f32, and why.
// RUN: %opt %s -p 'npu-convert-precision{type=f16}' --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// REMARK-DAG: remark: npu-convert-precision: applied: [] softmax in f16: its row max and sum in f32
// REMARK-DAG: remark: npu-convert-precision: missed: [] kept in f32: a mean is a sum, which tiles would accumulate in the result's type
// REMARK-DAG: remark: npu-convert-precision: applied: [] 5 ops of @main computed in f16
