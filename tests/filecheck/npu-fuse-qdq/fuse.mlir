// RUN: %opt %s -p npu-fuse-qdq | filecheck %s

// A QDQ convolution (per-channel weights, an int32 bias of scale sx * sw) becomes an
// integer convolution with an i32 accumulator and a requantize by sx * sw / sy.
builtin.module {
  func.func @conv(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
    %sx = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %zx = npu_graph.constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
    %qx = npu_graph.quantize %x, %sx, %zx : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
    %dx = npu_graph.dequantize %qx, %sx, %zx : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    %w = npu_graph.constant {value = dense<[[[[1]], [[2]]], [[[-3]], [[4]]]]> : tensor<2x2x1x1xi8>} : tensor<2x2x1x1xi8>
    %sw = npu_graph.constant {value = dense<[[[[0.25]]], [[[0.125]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
    %zw = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %dw = npu_graph.dequantize %w, %sw, %zw : (tensor<2x2x1x1xi8>, tensor<2x1x1x1xf32>, tensor<f32>) -> tensor<2x2x1x1xf32>
    %b = npu_graph.constant {value = dense<[7, -9]> : tensor<2xi32>} : tensor<2xi32>
    %sb = npu_graph.constant {value = dense<[0.125, 0.0625]> : tensor<2xf32>} : tensor<2xf32>
    %db = npu_graph.dequantize %b, %sb, %zw : (tensor<2xi32>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    %y = npu_graph.conv2d %dx, %dw, %db {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    %sy = npu_graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
    %zy = npu_graph.constant {value = dense<-1.0> : tensor<f32>} : tensor<f32>
    %qy = npu_graph.quantize %y, %sy, %zy : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
    %r = npu_graph.dequantize %qy, %sy, %zy : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    func.return %r : tensor<1x2x4x4xf32>
  }
  // CHECK-LABEL: func.func @conv
  // CHECK:      %qx = npu_graph.quantize %x, %sx, %zx
  // CHECK-NOT:  npu_graph.dequantize %qx
  // CHECK:      %[[W:.*]] = npu_graph.constant {value = dense<{{\[}}{{\[}}{{\[}}[1]], {{\[}}[2]]], {{\[}}{{\[}}[-3]], {{\[}}[4]]]]> : tensor<2x2x1x1xi8>}
  // CHECK:      %[[B:.*]] = npu_graph.constant {value = dense<[7, -9]> : tensor<2xi32>}
  // CHECK:      %[[ACC:.*]] = npu_graph.conv2d %qx, %[[W]], %[[B]] {{.*}}input_zero_point = 3 : i64} : (tensor<1x2x4x4xi8>, tensor<2x2x1x1xi8>, tensor<2xi32>) -> tensor<1x2x4x4xi32>
  // CHECK:      %[[M:.*]] = npu_graph.constant {value = dense<{{\[}}{{\[}}{{\[}}[6.250000e-02]], {{\[}}[3.125000e-02]]]]> : tensor<1x2x1x1xf32>}
  // CHECK:      %[[Z:.*]] = npu_graph.constant {value = dense<-1.000000e+00> : tensor<f32>}
  // CHECK:      %qy = npu_graph.requantize %[[ACC]], %[[M]], %[[Z]] : (tensor<1x2x4x4xi32>, tensor<1x2x1x1xf32>, tensor<f32>) -> tensor<1x2x4x4xi8>
  // CHECK:      npu_graph.dequantize %qy, %sy, %zy

  // Data movement between a dequantize and a quantize of the same parameters runs on the
  // integers; quantize(dequantize(x)) of the same parameters is x.
  func.func @movement(%q: tensor<1x8xui8>) -> tensor<2x4xui8> {
    %s = npu_graph.constant {value = dense<0.1> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<128.0> : tensor<f32>} : tensor<f32>
    %d = npu_graph.dequantize %q, %s, %z : (tensor<1x8xui8>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
    %r = npu_graph.reshape %d : (tensor<1x8xf32>) -> tensor<2x4xf32>
    %y = npu_graph.quantize %r, %s, %z : (tensor<2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x4xui8>
    %d2 = npu_graph.dequantize %y, %s, %z : (tensor<2x4xui8>, tensor<f32>, tensor<f32>) -> tensor<2x4xf32>
    %y2 = npu_graph.quantize %d2, %s, %z : (tensor<2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x4xui8>
    func.return %y2 : tensor<2x4xui8>
  }
  // CHECK-LABEL: func.func @movement
  // CHECK-NEXT:   %[[R:.*]] = npu_graph.reshape %q : (tensor<1x8xui8>) -> tensor<2x4xui8>
  // CHECK-NEXT:   func.return %[[R]] : tensor<2x4xui8>

  // A product of two per-tensor quantized activations (attention's q @ kt): both
  // zero points on the integer matmul, the multiplier sx * sy / sout per column.
  func.func @activations(%x: tensor<1x4xi8>, %w: tensor<4x2xui8>) -> tensor<1x2xi8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %s2 = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %z2 = npu_graph.constant {value = dense<128.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4xf32>
    %dw = npu_graph.dequantize %w, %s2, %z2 : (tensor<4x2xui8>, tensor<f32>, tensor<f32>) -> tensor<4x2xf32>
    %y = npu_graph.matmul %dx, %dw : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    %q = npu_graph.quantize %y, %s, %z : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xi8>
    func.return %q : tensor<1x2xi8>
  }
  // CHECK-LABEL: func.func @activations
  // CHECK:      %[[ACC:.*]] = npu_graph.matmul %x, %w {weight_zero_point = 128 : i64} : (tensor<1x4xi8>, tensor<4x2xui8>) -> tensor<1x2xi32>
  // CHECK:      %[[M:.*]] = npu_graph.constant {value = dense<2.500000e-01> : tensor<2xf32>}
  // CHECK:      %q = npu_graph.requantize %[[ACC]], %[[M]], %{{.*}} : (tensor<1x2xi32>, tensor<2xf32>, tensor<f32>) -> tensor<1x2xi8>

  // The same batched over heads (attention's q @ kt per head, [B, H, S, D] @ [B, H, D, T]).
  func.func @batched(%q: tensor<1x2x3x4xi8>, %kt: tensor<1x2x4x5xi8>) -> tensor<1x2x3x5xi8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %dq = npu_graph.dequantize %q, %s, %z : (tensor<1x2x3x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x3x4xf32>
    %dk = npu_graph.dequantize %kt, %s, %z : (tensor<1x2x4x5xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x5xf32>
    %y = npu_graph.matmul %dq, %dk : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
    %o = npu_graph.quantize %y, %s, %z : (tensor<1x2x3x5xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x3x5xi8>
    func.return %o : tensor<1x2x3x5xi8>
  }
  // CHECK-LABEL: func.func @batched
  // CHECK:      %[[ACC:.*]] = npu_graph.matmul %q, %kt : (tensor<1x2x3x4xi8>, tensor<1x2x4x5xi8>) -> tensor<1x2x3x5xi32>
  // CHECK:      %[[M:.*]] = npu_graph.constant {value = dense<5.000000e-01> : tensor<5xf32>}
  // CHECK:      %o = npu_graph.requantize %[[ACC]], %[[M]], %{{.*}} : (tensor<1x2x3x5xi32>, tensor<5xf32>, tensor<f32>) -> tensor<1x2x3x5xi8>

  // A concat of tensors quantized with other parameters than its result's: each operand
  // is quantized with the result's parameters (defined after the concat: the new
  // quantizes go where the output's was) and the concat moves integers.
  func.func @concat(%a: tensor<1x2xi8>, %b: tensor<1x2xi8>) -> tensor<1x4xi8> {
    %sa = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %sa, %z : (tensor<1x2xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2xf32>
    %db = npu_graph.dequantize %b, %sa, %z : (tensor<1x2xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2xf32>
    %c = npu_graph.concat %da, %db {axis = 1 : i64} : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x4xf32>
    %so = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %q = npu_graph.quantize %c, %so, %z : (tensor<1x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4xi8>
    func.return %q : tensor<1x4xi8>
  }
  // CHECK-LABEL: func.func @concat
  // CHECK:      %so = npu_graph.constant
  // CHECK-NEXT: %[[QA:.*]] = npu_graph.quantize %da, %so, %z : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xi8>
  // CHECK-NEXT: %[[QB:.*]] = npu_graph.quantize %db, %so, %z : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xi8>
  // CHECK-NEXT: %q = npu_graph.concat %[[QA]], %[[QB]] {axis = 1 : i64} : (tensor<1x2xi8>, tensor<1x2xi8>) -> tensor<1x4xi8>
}
