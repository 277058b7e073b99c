// RUN: %opt %s -p npu-fuse-qdq | filecheck %s
// RUN: %opt %s -p npu-fuse-qdq --remarks=- 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// Where the pass must not fire: the float op stays between its dequantize and quantize.
builtin.module {
  // The weight's zero points differ per channel (no single weight_zero_point).
  func.func @zero_points(%x: tensor<1x4xi8>) -> tensor<1x2xi8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4xf32>
    %w = npu_graph.constant {value = dense<1> : tensor<4x2xi8>} : tensor<4x2xi8>
    %zw = npu_graph.constant {value = dense<[[1.0, 2.0]]> : tensor<1x2xf32>} : tensor<1x2xf32>
    %dw = npu_graph.dequantize %w, %s, %zw : (tensor<4x2xi8>, tensor<f32>, tensor<1x2xf32>) -> tensor<4x2xf32>
    %y = npu_graph.matmul %dx, %dw : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    %q = npu_graph.quantize %y, %s, %z : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xi8>
    func.return %q : tensor<1x2xi8>
  }
  // CHECK-LABEL: func.func @zero_points
  // CHECK: %y = npu_graph.matmul %dx, %dw : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
  // CHECK: npu_graph.quantize %y

  // The product is read twice (its float value is an output too).
  func.func @two_uses(%x: tensor<1x4xi8>) -> (tensor<1x2xi8>, tensor<1x2xf32>) {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4xf32>
    %w = npu_graph.constant {value = dense<1> : tensor<4x2xi8>} : tensor<4x2xi8>
    %dw = npu_graph.dequantize %w, %s, %z : (tensor<4x2xi8>, tensor<f32>, tensor<f32>) -> tensor<4x2xf32>
    %y = npu_graph.matmul %dx, %dw : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    %q = npu_graph.quantize %y, %s, %z : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xi8>
    func.return %q, %y : tensor<1x2xi8>, tensor<1x2xf32>
  }
  // CHECK-LABEL: func.func @two_uses
  // CHECK: %y = npu_graph.matmul %dx, %dw

  // An add of a float tensor stays in float; a reshape between parameters that differ
  // moves integers once its operand is quantized with its result's parameters.
  func.func @float_ops(%a: tensor<1x8xi8>, %db: tensor<1x8xf32>) -> tensor<2x4xi8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %s2 = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %s, %z : (tensor<1x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
    %sum = npu_graph.add %da, %db : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
    %qs = npu_graph.quantize %sum, %s, %z : (tensor<1x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8xi8>
    %ds = npu_graph.dequantize %qs, %s, %z : (tensor<1x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
    %r = npu_graph.reshape %ds : (tensor<1x8xf32>) -> tensor<2x4xf32>
    %q = npu_graph.quantize %r, %s2, %z : (tensor<2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x4xi8>
    func.return %q : tensor<2x4xi8>
  }
  // CHECK-LABEL: func.func @float_ops
  // CHECK: %sum = npu_graph.add %da, %db : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  // CHECK: %[[Q:.*]] = npu_graph.quantize %ds, %s2, %z : (tensor<1x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8xi8>
  // CHECK: %q = npu_graph.reshape %[[Q]] : (tensor<1x8xi8>) -> tensor<2x4xi8>
  // REMARK: remark: npu-fuse-qdq: missed: {{.*}}npu_graph.matmul kept in float: it needs a per-tensor quantized input and constant integer weights
  // REMARK: remark: npu-fuse-qdq: missed: {{.*}}npu_graph.add kept in float: an operand is not a per-tensor dequantized 8-bit tensor
  // REMARK: remark: npu-fuse-qdq: applied: {{.*}}npu_graph.reshape moves integers: its operands are quantized with its result's parameters
}
