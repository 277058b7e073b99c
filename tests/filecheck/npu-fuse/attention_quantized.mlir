// RUN: %opt %s --split-input-file -p npu-fuse,npu-dce | filecheck %s
// RUN: %opt %s --split-input-file -p 'npu-fuse{disable=attention}' | filecheck %s --check-prefix=OFF

// A QDQ attention as npu-fuse-qdq leaves it (BERT's: integer q @ kt, requantize, the
// divide by sqrt(d) folded into a table, dequantize, plus the mask, a quantize/
// dequantize pair, softmax, quantize, integer @ v, requantize) -> one
// npu_graph.attention with `quant` (fields in AttentionOp.QUANT_FIELDS order: zero
// points of q, k, v; m1 z1 lo1 hi1; s1 z1t; s2 z2 lo2 hi2; s3 z3 lo3 hi3; m2 z4 lo4
// hi4; fixed; div) and the table: the kernel computes each of these ops as written.
// CHECK-LABEL: func.func @bert
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %kt, %v, %mask {scale = 1.000000e+00 : f32, quant = array<f32: 0.000000e+00, 3.000000e+00, 0.000000e+00, 2.500000e-01, 0.000000e+00, -1.280000e+02, 1.270000e+02, 1.250000e-01, 0.000000e+00, 5.000000e-02, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.00787401572, 0.000000e+00, -1.280000e+02, 1.270000e+02, 5.000000e-01, 1.000000e+00, -1.280000e+02, 1.270000e+02, 0.000000e+00, 0.000000e+00>, score_table = array<i64: 0, 1, 2
// CHECK-SAME:    : (tensor<1x2x4x8xi8>, tensor<1x2x8x4xi8>, tensor<1x2x4x8xi8>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xi8>
// CHECK-NEXT:    func.return %[[A]]
// OFF-LABEL:   func.func @bert
// OFF:           npu_graph.softmax
// OFF-NOT:       npu_graph.attention
func.func @bert(%q: tensor<1x2x4x8xi8>, %kt: tensor<1x2x8x4xi8>, %v: tensor<1x2x4x8xi8>, %mask: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xi8> {
  %m1 = npu_graph.constant {value = dense<0.25> : tensor<4xf32>} : tensor<4xf32>
  %z0 = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %z1 = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %tab = npu_graph.constant {value = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, -128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1]> : tensor<256xi8>} : tensor<256xi8>
  %s1 = npu_graph.constant {value = dense<0.125> : tensor<f32>} : tensor<f32>
  %s2 = npu_graph.constant {value = dense<0.05> : tensor<f32>} : tensor<f32>
  %s3 = npu_graph.constant {value = dense<0.00787401571> : tensor<f32>} : tensor<f32>
  %m2 = npu_graph.constant {value = dense<0.5> : tensor<8xf32>} : tensor<8xf32>
  %acc = npu_graph.matmul %q, %kt {weight_zero_point = 3 : i64} : (tensor<1x2x4x8xi8>, tensor<1x2x8x4xi8>) -> tensor<1x2x4x4xi32>
  %c1 = npu_graph.requantize %acc, %m1, %z0 : (tensor<1x2x4x4xi32>, tensor<4xf32>, tensor<f32>) -> tensor<1x2x4x4xi8>
  %t = npu_graph.table %c1, %tab : (tensor<1x2x4x4xi8>, tensor<256xi8>) -> tensor<1x2x4x4xi8>
  %x = npu_graph.dequantize %t, %s1, %z0 : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %xm = npu_graph.add %x, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %c2 = npu_graph.quantize %xm, %s2, %z0 : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
  %x2 = npu_graph.dequantize %c2, %s2, %z0 : (tensor<1x2x4x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = npu_graph.softmax %x2 {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c3 = npu_graph.quantize %p, %s3, %z0 : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4x4xi8>
  %acc2 = npu_graph.matmul %c3, %v : (tensor<1x2x4x4xi8>, tensor<1x2x4x8xi8>) -> tensor<1x2x4x8xi32>
  %o = npu_graph.requantize %acc2, %m2, %z1 : (tensor<1x2x4x8xi32>, tensor<8xf32>, tensor<f32>) -> tensor<1x2x4x8xi8>
  func.return %o : tensor<1x2x4x8xi8>
}

// -----

// GPT-2's: the scale a divide of the dequantized scores (kept as `div`, not turned
// into a multiply: the kernel divides as the graph does), a causal where, no pair
// after it; no table.
// CHECK-LABEL: func.func @causal
// CHECK:         npu_graph.attention %q, %kt, %v, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f32, quant = array<f32: {{.*}}, 0.000000e+00, 8.000000e+00>, causal = -3.40282347e+38 : f32}
// CHECK-NOT:     npu_graph.softmax
func.func @causal(%q: tensor<1x3x2x4xi8>, %kt: tensor<1x3x4x2xi8>, %v: tensor<1x3x2x4xi8>) -> tensor<1x3x2x4xi8> {
  %tril = npu_graph.constant {value = dense<[[[[1.0, 0.0], [1.0, 1.0]]]]> : tensor<1x1x2x2xf32>} : tensor<1x1x2x2xf32>
  %min = npu_graph.constant {value = dense<-3.40282347e+38> : tensor<f32>} : tensor<f32>
  %eight = npu_graph.constant {value = dense<8.0> : tensor<f32>} : tensor<f32>
  %m = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
  %z0 = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %s = npu_graph.constant {value = dense<0.1> : tensor<f32>} : tensor<f32>
  %acc = npu_graph.matmul %q, %kt : (tensor<1x3x2x4xi8>, tensor<1x3x4x2xi8>) -> tensor<1x3x2x2xi32>
  %c1 = npu_graph.requantize %acc, %m, %z0 : (tensor<1x3x2x2xi32>, tensor<f32>, tensor<f32>) -> tensor<1x3x2x2xi8>
  %x = npu_graph.dequantize %c1, %s, %z0 : (tensor<1x3x2x2xi8>, tensor<f32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %d = npu_graph.div %x, %eight : (tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %w = npu_graph.where %tril, %d, %min : (tensor<1x1x2x2xf32>, tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %p = npu_graph.softmax %w {axis = 3 : i64} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %c3 = npu_graph.quantize %p, %s, %z0 : (tensor<1x3x2x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x3x2x2xi8>
  %acc2 = npu_graph.matmul %c3, %v : (tensor<1x3x2x2xi8>, tensor<1x3x2x4xi8>) -> tensor<1x3x2x4xi32>
  %o = npu_graph.requantize %acc2, %m, %z0 : (tensor<1x3x2x4xi32>, tensor<f32>, tensor<f32>) -> tensor<1x3x2x4xi8>
  func.return %o : tensor<1x3x2x4xi8>
}

// -----

// Not fused: the probabilities' quantize is read elsewhere too (written anyway);
// per-channel multipliers (not one requantize of the scores); the product with v
// reads the probabilities with another zero point than they were quantized with.
// CHECK-LABEL: func.func @shared
// CHECK:         npu_graph.softmax
// CHECK-NOT:     npu_graph.attention
// CHECK-LABEL: func.func @per_channel
// CHECK:         npu_graph.softmax
// CHECK-NOT:     npu_graph.attention
// CHECK-LABEL: func.func @zero_point
// CHECK:         npu_graph.softmax
// CHECK-NOT:     npu_graph.attention
func.func @shared(%q: tensor<1x2x4xi8>, %kt: tensor<1x4x2xi8>, %v: tensor<1x2x4xi8>) -> (tensor<1x2x4xi8>, tensor<1x2x2xi8>) {
  %m = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
  %z0 = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %s = npu_graph.constant {value = dense<0.1> : tensor<f32>} : tensor<f32>
  %acc = npu_graph.matmul %q, %kt : (tensor<1x2x4xi8>, tensor<1x4x2xi8>) -> tensor<1x2x2xi32>
  %c1 = npu_graph.requantize %acc, %m, %z0 : (tensor<1x2x2xi32>, tensor<f32>, tensor<f32>) -> tensor<1x2x2xi8>
  %x = npu_graph.dequantize %c1, %s, %z0 : (tensor<1x2x2xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x2xf32>
  %p = npu_graph.softmax %x {axis = 2 : i64} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %c3 = npu_graph.quantize %p, %s, %z0 : (tensor<1x2x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x2xi8>
  %acc2 = npu_graph.matmul %c3, %v : (tensor<1x2x2xi8>, tensor<1x2x4xi8>) -> tensor<1x2x4xi32>
  %o = npu_graph.requantize %acc2, %m, %z0 : (tensor<1x2x4xi32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4xi8>
  func.return %o, %c3 : tensor<1x2x4xi8>, tensor<1x2x2xi8>
}
func.func @per_channel(%q: tensor<1x2x4xi8>, %kt: tensor<1x4x2xi8>, %v: tensor<1x2x4xi8>) -> tensor<1x2x4xi8> {
  %m = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
  %mc = npu_graph.constant {value = dense<[0.25, 0.5]> : tensor<2xf32>} : tensor<2xf32>
  %z0 = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %s = npu_graph.constant {value = dense<0.1> : tensor<f32>} : tensor<f32>
  %acc = npu_graph.matmul %q, %kt : (tensor<1x2x4xi8>, tensor<1x4x2xi8>) -> tensor<1x2x2xi32>
  %c1 = npu_graph.requantize %acc, %mc, %z0 : (tensor<1x2x2xi32>, tensor<2xf32>, tensor<f32>) -> tensor<1x2x2xi8>
  %x = npu_graph.dequantize %c1, %s, %z0 : (tensor<1x2x2xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x2xf32>
  %p = npu_graph.softmax %x {axis = 2 : i64} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %c3 = npu_graph.quantize %p, %s, %z0 : (tensor<1x2x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x2xi8>
  %acc2 = npu_graph.matmul %c3, %v : (tensor<1x2x2xi8>, tensor<1x2x4xi8>) -> tensor<1x2x4xi32>
  %o = npu_graph.requantize %acc2, %m, %z0 : (tensor<1x2x4xi32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4xi8>
  func.return %o : tensor<1x2x4xi8>
}
func.func @zero_point(%q: tensor<1x2x4xi8>, %kt: tensor<1x4x2xi8>, %v: tensor<1x2x4xi8>) -> tensor<1x2x4xi8> {
  %m = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
  %z0 = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %s = npu_graph.constant {value = dense<0.1> : tensor<f32>} : tensor<f32>
  %acc = npu_graph.matmul %q, %kt : (tensor<1x2x4xi8>, tensor<1x4x2xi8>) -> tensor<1x2x2xi32>
  %c1 = npu_graph.requantize %acc, %m, %z0 : (tensor<1x2x2xi32>, tensor<f32>, tensor<f32>) -> tensor<1x2x2xi8>
  %x = npu_graph.dequantize %c1, %s, %z0 : (tensor<1x2x2xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x2xf32>
  %p = npu_graph.softmax %x {axis = 2 : i64} : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %c3 = npu_graph.quantize %p, %s, %z0 : (tensor<1x2x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x2xi8>
  %acc2 = npu_graph.matmul %c3, %v {input_zero_point = 5 : i64} : (tensor<1x2x2xi8>, tensor<1x2x4xi8>) -> tensor<1x2x4xi32>
  %o = npu_graph.requantize %acc2, %m, %z0 : (tensor<1x2x4xi32>, tensor<f32>, tensor<f32>) -> tensor<1x2x4xi8>
  func.return %o : tensor<1x2x4xi8>
}
