// RUN: %opt %s -p npu-fuse-qdq | filecheck %s
// RUN: %opt %s -p npu-fuse-qdq --remarks=- 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// A Relu or a constant Clip in front of a quantize narrows its saturation range
// (exact: quantizing is monotonic); a cube op under it then requantizes with that range.
builtin.module {
  // Relu after an add of two dequantized tensors: folded into the quantize's range
  // (min = zero point), which the integer add (qadd) then keeps.
  func.func @relu(%a: tensor<1x8xui8>, %b: tensor<1x8xui8>) -> tensor<1x8xui8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<10.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %s, %z : (tensor<1x8xui8>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
    %db = npu_graph.dequantize %b, %s, %z : (tensor<1x8xui8>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
    %sum = npu_graph.add %da, %db : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
    %r = npu_graph.relu %sum : (tensor<1x8xf32>) -> tensor<1x8xf32>
    %q = npu_graph.quantize %r, %s, %z : (tensor<1x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8xui8>
    func.return %q : tensor<1x8xui8>
  }
  // CHECK-LABEL: func.func @relu
  // CHECK-NOT: npu_graph.relu
  // CHECK: %q = npu_graph.qadd %a, %b {{{.*}}, min = 10 : i64, max = 255 : i64} : (tensor<1x8xui8>, tensor<1x8xui8>) -> tensor<1x8xui8>

  // Clip(0, 6) (ReLU6) after a matmul: the requantize saturates to [q(0), q(6)] = [0, 12].
  func.func @relu6(%x: tensor<1x4xi8>) -> tensor<1x2xi8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %lo = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %hi = npu_graph.constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4xf32>
    %w = npu_graph.constant {value = dense<1> : tensor<4x2xi8>} : tensor<4x2xi8>
    %dw = npu_graph.dequantize %w, %s, %z : (tensor<4x2xi8>, tensor<f32>, tensor<f32>) -> tensor<4x2xf32>
    %y = npu_graph.matmul %dx, %dw : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    %c = npu_graph.clip %y, %lo, %hi : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xf32>
    %q = npu_graph.quantize %c, %s, %z : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xi8>
    func.return %q : tensor<1x2xi8>
  }
  // CHECK-LABEL: func.func @relu6
  // CHECK: %[[ACC:.*]] = npu_graph.matmul %x, %{{.*}} : (tensor<1x4xi8>, tensor<4x2xi8>) -> tensor<1x2xi32>
  // CHECK: npu_graph.requantize %[[ACC]], %{{.*}}, %{{.*}} {min = 0 : i64, max = 12 : i64}
  // CHECK-NOT: npu_graph.clip

  // Not folded: the Relu's value is read twice; a Clip whose bound is not a constant.
  func.func @kept(%a: tensor<1x8xi8>, %hi: tensor<f32>) -> (tensor<1x8xi8>, tensor<1x8xf32>, tensor<1x8xi8>) {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %lo = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %s, %z : (tensor<1x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
    %e = npu_graph.exp %da : (tensor<1x8xf32>) -> tensor<1x8xf32>
    %r = npu_graph.relu %e : (tensor<1x8xf32>) -> tensor<1x8xf32>
    %q = npu_graph.quantize %r, %s, %z : (tensor<1x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8xi8>
    %c = npu_graph.clip %e, %lo, %hi : (tensor<1x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
    %q2 = npu_graph.quantize %c, %s, %z : (tensor<1x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8xi8>
    func.return %q, %r, %q2 : tensor<1x8xi8>, tensor<1x8xf32>, tensor<1x8xi8>
  }
  // CHECK-LABEL: func.func @kept
  // CHECK: %r = npu_graph.relu %e
  // CHECK: npu_graph.quantize %r, %s, %z :
  // CHECK: %c = npu_graph.clip %e, %lo, %hi
  // CHECK: npu_graph.quantize %c, %s, %z :

  // Relu between a conv's quantize/dequantize pair and a quantize of the same parameters:
  // the conv's requantize saturates at the zero point (onnxruntime's Conv -> Q -> DQ -> Relu -> Q).
  func.func @relu_after_pair(%x: tensor<1x4xi8>) -> tensor<1x2xi8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4xf32>
    %w = npu_graph.constant {value = dense<1> : tensor<4x2xi8>} : tensor<4x2xi8>
    %dw = npu_graph.dequantize %w, %s, %z : (tensor<4x2xi8>, tensor<f32>, tensor<f32>) -> tensor<4x2xf32>
    %y = npu_graph.matmul %dx, %dw : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    %q = npu_graph.quantize %y, %s, %z : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xi8>
    %d = npu_graph.dequantize %q, %s, %z : (tensor<1x2xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2xf32>
    %r = npu_graph.relu %d : (tensor<1x2xf32>) -> tensor<1x2xf32>
    %q2 = npu_graph.quantize %r, %s, %z : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xi8>
    func.return %q2 : tensor<1x2xi8>
  }
  // CHECK-LABEL: func.func @relu_after_pair
  // CHECK: npu_graph.requantize %{{.*}}, %{{.*}}, %{{.*}} {min = 3 : i64, max = 127 : i64}
  // CHECK-NOT: npu_graph.dequantize
  // CHECK-NOT: npu_graph.quantize
  // CHECK: func.return

  // A narrowed quantize after a reshape of the same parameters keeps its range: the
  // quantize moves onto the reshape's operand instead of vanishing.
  func.func @relu_after_move(%a: tensor<1x8xi8>) -> tensor<2x4xi8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %s, %z : (tensor<1x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
    %m = npu_graph.reshape %da : (tensor<1x8xf32>) -> tensor<2x4xf32>
    %r = npu_graph.relu %m : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %q = npu_graph.quantize %r, %s, %z : (tensor<2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x4xi8>
    func.return %q : tensor<2x4xi8>
  }
  // CHECK-LABEL: func.func @relu_after_move
  // CHECK: %[[Q:.*]] = npu_graph.quantize %da, %s, %z {min = 0 : i64, max = 127 : i64} : (tensor<1x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8xi8>
  // CHECK: npu_graph.reshape %[[Q]] : (tensor<1x8xi8>) -> tensor<2x4xi8>
}

// REMARK: remark: npu-fuse-qdq: applied: {{.*}}npu_graph.relu folded into the quantize's saturation range [10, 255]
// REMARK: remark: npu-fuse-qdq: applied: {{.*}}npu_graph.clip folded into the quantize's saturation range [0, 12]
