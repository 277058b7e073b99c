// RUN: %opt %s --split-input-file -p npu-canonicalize | filecheck %s
// FuseGelu: GELU spelled out by an exporter (PyTorch's exact GELU, GPT-2's gelu_new)
// becomes one npu_graph.gelu / gelu_tanh, an elementwise op a matmul epilogue fuses.

// The exact form as PyTorch exports it: x * (1 + erf(x / sqrt 2)) * 0.5.
// CHECK-LABEL: func.func @erf_div
// CHECK-NEXT:    %[[G:.*]] = npu_graph.gelu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[G]]
func.func @erf_div(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = npu_graph.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %d = npu_graph.div %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = npu_graph.erf %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = npu_graph.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = npu_graph.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npu_graph.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// The halving first, the scaling as a multiply by 1/sqrt 2, 1 + erf in the other order.
// CHECK-LABEL: func.func @erf_mul
// CHECK-NEXT:    %[[G:.*]] = npu_graph.gelu %x
// CHECK-NEXT:    func.return %[[G]]
func.func @erf_mul(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = npu_graph.constant {value = dense<0.707106769> : tensor<f32>} : tensor<f32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %h = npu_graph.mul %half, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = npu_graph.mul %s, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = npu_graph.erf %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = npu_graph.add %one, %e : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npu_graph.mul %h, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 pow(x, 3)))).
// CHECK-LABEL: func.func @tanh_pow
// CHECK-NEXT:    %[[G:.*]] = npu_graph.gelu_tanh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[G]]
func.func @tanh_pow(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %three = npu_graph.constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
  %c = npu_graph.constant {value = dense<0.044715> : tensor<f32>} : tensor<f32>
  %k = npu_graph.constant {value = dense<0.797884583> : tensor<f32>} : tensor<f32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %p = npu_graph.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %q = npu_graph.mul %c, %p : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %i = npu_graph.add %x, %q : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = npu_graph.mul %k, %i : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = npu_graph.tanh %u : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = npu_graph.add %one, %t : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = npu_graph.mul %half, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npu_graph.mul %h, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// x^3 as two multiplies.
// CHECK-LABEL: func.func @tanh_muls
// CHECK-NEXT:    %[[G:.*]] = npu_graph.gelu_tanh %x
// CHECK-NEXT:    func.return %[[G]]
func.func @tanh_muls(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = npu_graph.constant {value = dense<0.044715> : tensor<f32>} : tensor<f32>
  %k = npu_graph.constant {value = dense<0.797884583> : tensor<f32>} : tensor<f32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %x2 = npu_graph.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = npu_graph.mul %x2, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = npu_graph.mul %p, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %i = npu_graph.add %q, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %u = npu_graph.mul %i, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %t = npu_graph.tanh %u : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = npu_graph.add %t, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = npu_graph.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npu_graph.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// Must not fire: a scale of 0.4 instead of 0.5 (not GELU) ...
// CHECK-LABEL: func.func @wrong_half
// CHECK-NOT:     npu_graph.gelu
// CHECK:         npu_graph.erf
func.func @wrong_half(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = npu_graph.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = npu_graph.constant {value = dense<0.4> : tensor<f32>} : tensor<f32>
  %d = npu_graph.div %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = npu_graph.erf %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = npu_graph.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = npu_graph.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npu_graph.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// ... the erf of a different value than the one multiplied (z * (1 + erf(x / sqrt 2)) / 2) ...
// CHECK-LABEL: func.func @two_values
// CHECK-NOT:     npu_graph.gelu
// CHECK:         npu_graph.erf
func.func @two_values(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = npu_graph.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %d = npu_graph.div %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = npu_graph.erf %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = npu_graph.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = npu_graph.mul %z, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npu_graph.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

// ... and sqrt 2 as the dividend (erf(sqrt 2 / x)), not the divisor.
// CHECK-LABEL: func.func @swapped_div
// CHECK-NOT:     npu_graph.gelu
// CHECK:         npu_graph.erf
func.func @swapped_div(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = npu_graph.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %d = npu_graph.div %s, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = npu_graph.erf %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = npu_graph.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = npu_graph.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npu_graph.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
