// RUN: %opt %s -p npu-fuse-qdq | filecheck %s
// RUN: %opt %s -p npu-fuse-qdq --remarks=- 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// quantize(add(dequantize(a), dequantize(b))) -> qadd(a, b): a residual add of two 8-bit
// tensors computed in integers, each one's parameters and the result's as attributes.
builtin.module {
  // Different parameters on each side and at the result; the operand of the result's
  // shape goes first, the broadcast one second.
  func.func @residual(%a: tensor<1x4x8x8xi8>, %b: tensor<1x4x1x1xi8>) -> tensor<1x4x8x8xi8> {
    %sa = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %za = npu_graph.constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
    %sb = npu_graph.constant {value = dense<0.0123456791> : tensor<f32>} : tensor<f32>
    %zb = npu_graph.constant {value = dense<-7.0> : tensor<f32>} : tensor<f32>
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %sa, %za : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
    %db = npu_graph.dequantize %b, %sb, %zb : (tensor<1x4x1x1xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x1x1xf32>
    %sum = npu_graph.add %db, %da : (tensor<1x4x1x1xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %q = npu_graph.quantize %sum, %s, %z : (tensor<1x4x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xi8>
    func.return %q : tensor<1x4x8x8xi8>
  }
  // CHECK-LABEL: func.func @residual
  // CHECK-NEXT:  %q = npu_graph.qadd %a, %b {a_scale = 2.500000e-01 : f32, a_zero_point = 3.000000e+00 : f32, b_scale = 0.0123456791 : f32, b_zero_point = -7.000000e+00 : f32, scale = 5.000000e-01 : f32, zero_point = 1.000000e+00 : f32} : (tensor<1x4x8x8xi8>, tensor<1x4x1x1xi8>) -> tensor<1x4x8x8xi8>
  // CHECK-NEXT:  func.return %q
  // REMARK: remark: npu-fuse-qdq: applied: {{.*}}npu_graph.add computed in integers (qadd of two i8/i8 tensors to i8)

  // Mixed 8-bit types: a ui8 and an i8 operand into a ui8 result.
  func.func @mixed(%a: tensor<16xui8>, %b: tensor<16xi8>) -> tensor<16xui8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<128.0> : tensor<f32>} : tensor<f32>
    %z0 = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %s, %z : (tensor<16xui8>, tensor<f32>, tensor<f32>) -> tensor<16xf32>
    %db = npu_graph.dequantize %b, %s, %z0 : (tensor<16xi8>, tensor<f32>, tensor<f32>) -> tensor<16xf32>
    %sum = npu_graph.add %da, %db : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %q = npu_graph.quantize %sum, %s, %z : (tensor<16xf32>, tensor<f32>, tensor<f32>) -> tensor<16xui8>
    func.return %q : tensor<16xui8>
  }
  // CHECK-LABEL: func.func @mixed
  // CHECK-NEXT:  %q = npu_graph.qadd %a, %b {{{.*}}} : (tensor<16xui8>, tensor<16xi8>) -> tensor<16xui8>

  // Must not fire: a per-channel dequantized operand; both operands broadcast; the sum read
  // twice (its float value is needed); an add whose result is not quantized.
  func.func @kept(%a: tensor<1x2x4x4xi8>, %b: tensor<1x2x4x4xi8>, %c: tensor<1x1x4x4xi8>, %d: tensor<1x2x1x1xi8>) -> (tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %sc = npu_graph.constant {value = dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %da = npu_graph.dequantize %a, %s, %z : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    %dbc = npu_graph.dequantize %b, %sc, %z : (tensor<1x2x4x4xi8>, tensor<2x1x1xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    %sum1 = npu_graph.add %da, %dbc : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %q1 = npu_graph.quantize %sum1, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
    %dc = npu_graph.dequantize %c, %s, %z : (tensor<1x1x4x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
    %dd = npu_graph.dequantize %d, %s, %z : (tensor<1x2x1x1xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x1x1xf32>
    %sum2 = npu_graph.add %dc, %dd : (tensor<1x1x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %q2 = npu_graph.quantize %sum2, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
    %sum3 = npu_graph.add %da, %da : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %q3 = npu_graph.quantize %sum3, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
    %sum4 = npu_graph.add %da, %da : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    func.return %q1, %q2, %q3, %sum3, %sum4 : tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xi8>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  }
  // CHECK-LABEL: func.func @kept
  // CHECK-NOT: npu_graph.qadd
  // CHECK: %sum1 = npu_graph.add %da, %dbc
  // CHECK: %sum2 = npu_graph.add %dc, %dd
  // CHECK: %sum3 = npu_graph.add %da, %da
  // CHECK: %sum4 = npu_graph.add %da, %da
  // CHECK-NOT: npu_graph.qadd
  // REMARK: remark: npu-fuse-qdq: missed: {{.*}}npu_graph.add kept in float: an operand is not a per-tensor dequantized 8-bit tensor
  // REMARK: remark: npu-fuse-qdq: missed: {{.*}}npu_graph.add kept in float: neither operand has the result's shape
  // (the masked scores' remark, of @attention_mask below, comes before the float ops' ones)
  // REMARK: remark: npu-fuse-qdq: missed: {{.*}}npu_graph.add kept in float: it masks attention scores
  // REMARK: remark: npu-fuse-qdq: missed: {{.*}}npu_graph.add kept in float between dequantize and quantize

  // Must not fire: an attention's masked scores (a softmax reads the sum): npu-fuse's
  // quantized attention kernel computes the float add as written.
  func.func @attention_mask(%t: tensor<2x8x8xi8>, %m: tensor<2x8x8xi8>) -> tensor<2x8x8xf32> {
    %s = npu_graph.constant {value = dense<0.125> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %dt = npu_graph.dequantize %t, %s, %z : (tensor<2x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<2x8x8xf32>
    %dm = npu_graph.dequantize %m, %s, %z : (tensor<2x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<2x8x8xf32>
    %sum = npu_graph.add %dt, %dm : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %q = npu_graph.quantize %sum, %s, %z : (tensor<2x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<2x8x8xi8>
    %d = npu_graph.dequantize %q, %s, %z : (tensor<2x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<2x8x8xf32>
    %p = npu_graph.softmax %d {axis = -1 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    func.return %p : tensor<2x8x8xf32>
  }
  // CHECK-LABEL: func.func @attention_mask
  // CHECK-NOT:   npu_graph.qadd
  // CHECK:       %sum = npu_graph.add %dt, %dm
}
