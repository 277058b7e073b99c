// RUN: %opt %s --split-input-file -p npu-canonicalize | filecheck %s
// RUN: %opt %s --split-input-file -p npu-canonicalize,npu-cse | filecheck %s --check-prefix=CSE
// StableVariance: a variance spelled mean(x^2) - mean(x)^2 (ONNX's GroupNormalization
// and MeanVarianceNormalization bodies) becomes mean((x - mean(x))^2), which float32
// computes without cancellation when the spread is small beside the mean.

// The GroupNormalization body's form: x * x, m * m, the normalisation's own x - m.
// CHECK-LABEL: func.func @mul_form
// CHECK:         %[[M:.*]] = npu_graph.reduce_mean %x {axes = array<i64: 2>, keepdims = true}
// CHECK-NEXT:    %[[D:.*]] = npu_graph.sub %x, %[[M]]
// CHECK-NEXT:    %[[SQ:.*]] = npu_graph.mul %[[D]], %[[D]]
// CHECK-NEXT:    %[[V:.*]] = npu_graph.reduce_mean %[[SQ]] {axes = array<i64: 2>, keepdims = true}
// CHECK-NEXT:    %[[Y:.*]] = npu_graph.sub %x, %[[M]]
// CHECK-NEXT:    %[[N:.*]] = npu_graph.div %[[Y]], %[[V]]
// npu-cse then merges the two x - m: no pass over the data is added.
// CSE-LABEL: func.func @mul_form
// CSE:         %[[D:.*]] = npu_graph.sub %x, %{{.*}}
// CSE-NOT:     npu_graph.sub
// CSE:         npu_graph.div %[[D]], %{{.*}}
func.func @mul_form(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %m = npu_graph.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %x2 = npu_graph.mul %x, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %ex2 = npu_graph.reduce_mean %x2 {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %m2 = npu_graph.mul %m, %m : (tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %v = npu_graph.sub %ex2, %m2 : (tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %y = npu_graph.sub %x, %m : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  %n = npu_graph.div %y, %v : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  func.return %n : tensor<2x3x4xf32>
}

// -----

// The MeanVarianceNormalization body's form: pow(x, 2) and pow(mean, 2), two axes.
// CHECK-LABEL: func.func @pow_form
// CHECK:         %[[M:.*]] = npu_graph.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = true}
// CHECK:         %[[D:.*]] = npu_graph.sub %x, %[[M]]
// CHECK-NEXT:    %[[SQ:.*]] = npu_graph.mul %[[D]], %[[D]]
// CHECK-NEXT:    %[[V:.*]] = npu_graph.reduce_mean %[[SQ]] {axes = array<i64: 0, 2>, keepdims = true}
// CHECK-NEXT:    func.return %[[V]]
func.func @pow_form(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %two = npu_graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %m = npu_graph.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %x2 = npu_graph.pow %x, %two : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %ex2 = npu_graph.reduce_mean %x2 {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %m2 = npu_graph.pow %m, %two : (tensor<1x3x1xf32>, tensor<f32>) -> tensor<1x3x1xf32>
  %v = npu_graph.sub %ex2, %m2 : (tensor<1x3x1xf32>, tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
  func.return %v : tensor<1x3x1xf32>
}

// -----

// Not a variance: the mean is over other axes than the mean of squares.
// CHECK-LABEL: func.func @other_axes
// CHECK:         %[[V:.*]] = npu_graph.sub %{{.*}}, %{{.*}} : (tensor<2x1x1xf32>, tensor<2x1x1xf32>)
// CHECK-NEXT:    func.return %[[V]]
func.func @other_axes(%x: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
  %m = npu_graph.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %x2 = npu_graph.mul %x, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %e1 = npu_graph.reduce_mean %x2 {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %ex2 = npu_graph.reduce_mean %e1 {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x1xf32>) -> tensor<2x1x1xf32>
  %m2 = npu_graph.mul %m, %m : (tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %v = npu_graph.sub %ex2, %m2 : (tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  func.return %v : tensor<2x1x1xf32>
}

// -----

// Not a variance: the squares and the mean are of different tensors.
// CHECK-LABEL: func.func @other_tensor
// CHECK:         %[[V:.*]] = npu_graph.sub %{{.*}}, %{{.*}} : (tensor<2x3x1xf32>, tensor<2x3x1xf32>)
// CHECK-NEXT:    func.return %[[V]]
func.func @other_tensor(%x: tensor<2x3x4xf32>, %z: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
  %m = npu_graph.reduce_mean %z {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %x2 = npu_graph.mul %x, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %ex2 = npu_graph.reduce_mean %x2 {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %m2 = npu_graph.mul %m, %m : (tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %v = npu_graph.sub %ex2, %m2 : (tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  func.return %v : tensor<2x3x1xf32>
}

// -----

// Not a variance: without keepdims the mean does not broadcast against x.
// CHECK-LABEL: func.func @no_keepdims
// CHECK:         %[[V:.*]] = npu_graph.sub %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-NEXT:    func.return %[[V]]
func.func @no_keepdims(%x: tensor<2x3x4xf32>) -> tensor<2x3xf32> {
  %m = npu_graph.reduce_mean %x {axes = array<i64: 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %x2 = npu_graph.mul %x, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %ex2 = npu_graph.reduce_mean %x2 {axes = array<i64: 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %m2 = npu_graph.mul %m, %m : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %v = npu_graph.sub %ex2, %m2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %v : tensor<2x3xf32>
}
