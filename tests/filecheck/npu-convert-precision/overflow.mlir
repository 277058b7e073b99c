// RUN: %opt %s -p 'npu-convert-precision{type=f16}' --weights-file %t.weights.npz | filecheck %s
// RUN: %opt %s -p 'npu-convert-precision{type=f16}' --weights-file %t.weights.npz --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: %opt %s -p 'npu-convert-precision{type=bf16}' --weights-file %t.weights.npz --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=BF16

// A causal mask's fill, the f32 minimum, is beyond f16's range: converted it becomes
// -inf (what the fill means; softmax gives its keys 0 either way), a weight of its own
// shape (a 0-d tensor stays 0-d: a pass reading it as a scalar finds it), and a remark
// says so - no numpy warning on the console. bf16 too: its largest finite value is
// 3.39e38, and the f32 minimum rounds (to nearest even) past it.
builtin.module {
  func.func @main(%s: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %c = npu_graph.constant {value = dense<[[1.0, 0.0], [1.0, 1.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
    %k = npu_graph.constant {value = dense<-3.40282347e+38> : tensor<f32>} : tensor<f32>
    %w = npu_graph.where %c, %s, %k : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
    %p = npu_graph.softmax %w {axis = 1 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    func.return %p : tensor<2x2xf32>
  }
}
// CHECK:       %k = npu_graph.constant {weight = "{{.*}}"} : tensor<f16>
// CHECK:       npu_graph.where %{{.*}}, %{{.*}}, %k : (tensor<2x2xf16>, tensor<2x2xf16>, tensor<f16>) -> tensor<2x2xf16>

// REMARK:      remark: npu-convert-precision: missed: [] 1 of the constant's 1 values are beyond f16's range and became +-inf (an f32 mask fill such as -3.4e38 is meant so)
// REMARK-NOT:  RuntimeWarning
// BF16:       remark: npu-convert-precision: missed: [] 1 of the constant's 1 values are beyond bf16's range and became +-inf
