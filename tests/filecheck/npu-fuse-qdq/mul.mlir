// RUN: %opt %s -p npu-fuse-qdq | filecheck %s
// RUN: %opt %s -p npu-fuse-qdq --remarks=- 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// quantize(mul(dequantize(a), dequantize(b))) -> qmul(a, b): a product of two 8-bit
// tensors (a squeeze-and-excitation gate) computed in integers.
builtin.module {
  // A channel gate [1, 4, 1, 1] times the feature map: the operand of the result's shape
  // goes first; the Relu folded into the quantize narrows the range (min = 0).
  func.func @gate(%x: tensor<1x4x8x8xi8>, %g: tensor<1x4x1x1xui8>) -> tensor<1x4x8x8xi8> {
    %sx = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %z0 = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %sg = npu_graph.constant {value = dense<0.00390625> : tensor<f32>} : tensor<f32>
    %s = npu_graph.constant {value = dense<0.125> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %sx, %z0 : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
    %dg = npu_graph.dequantize %g, %sg, %z0 : (tensor<1x4x1x1xui8>, tensor<f32>, tensor<f32>) -> tensor<1x4x1x1xf32>
    %p = npu_graph.mul %dg, %dx : (tensor<1x4x1x1xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %r = npu_graph.relu %p : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %q = npu_graph.quantize %r, %s, %z0 : (tensor<1x4x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xi8>
    func.return %q : tensor<1x4x8x8xi8>
  }
  // CHECK-LABEL: func.func @gate
  // CHECK-NEXT:  %q = npu_graph.qmul %x, %g {a_scale = 2.500000e-01 : f32, a_zero_point = 0.000000e+00 : f32, b_scale = 3.906250e-03 : f32, b_zero_point = 0.000000e+00 : f32, scale = 1.250000e-01 : f32, zero_point = 0.000000e+00 : f32, min = 0 : i64, max = 127 : i64} : (tensor<1x4x8x8xi8>, tensor<1x4x1x1xui8>) -> tensor<1x4x8x8xi8>
  // CHECK-NEXT:  func.return %q
  // REMARK: remark: npu-fuse-qdq: applied: {{.*}}npu_graph.mul computed in integers (qmul of two i8/ui8 tensors to i8)

  // Must not fire: a per-channel dequantized operand; a float operand (not dequantized);
  // a product whose result is not quantized; the product read twice.
  func.func @kept(%a: tensor<1x2x4x4xi8>, %b: tensor<1x2x4x4xi8>, %f: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xf32>) {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %sc = npu_graph.constant {value = dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %da = npu_graph.dequantize %a, %s, %z : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    %dbc = npu_graph.dequantize %b, %sc, %z : (tensor<1x2x4x4xi8>, tensor<2x1x1xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    %p1 = npu_graph.mul %da, %dbc : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %q1 = npu_graph.quantize %p1, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
    %p2 = npu_graph.mul %da, %f : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %q2 = npu_graph.quantize %p2, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
    %p3 = npu_graph.mul %da, %da : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %q4 = npu_graph.quantize %p3, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
    %p5 = npu_graph.mul %dbc, %dbc : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    func.return %q1, %q2, %p3, %q4, %p5 : tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xf32>
  }
  // CHECK-LABEL: func.func @kept
  // CHECK-NOT: npu_graph.qmul
  // CHECK: %p1 = npu_graph.mul %da, %dbc
  // CHECK: %p2 = npu_graph.mul %da, %f
  // CHECK: %p3 = npu_graph.mul %da, %da
  // CHECK: %p5 = npu_graph.mul %dbc, %dbc
  // CHECK-NOT: npu_graph.qmul
  // REMARK: remark: npu-fuse-qdq: missed: {{.*}}npu_graph.mul kept in float: an operand is not a per-tensor dequantized 8-bit tensor
  // REMARK: remark: npu-fuse-qdq: missed: {{.*}}npu_graph.mul kept in float: an operand is not a per-tensor dequantized 8-bit tensor
}

