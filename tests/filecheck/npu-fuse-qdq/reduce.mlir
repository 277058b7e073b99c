// RUN: %opt %s -p npu-fuse-qdq | filecheck %s
// RUN: %opt %s -p npu-fuse-qdq --remarks=- 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// reduce(dequantize(x)), x an 8-bit tensor dequantized per tensor: the reduction reads x
// and dequantizes it as it reads (input_scale, input_zero_point), its result still f32.
builtin.module {
  // A QDQ global average pool (a squeeze-and-excitation block's squeeze): the mean
  // reads the i8 tensor, the quantize after it stays (no integer form of the mean).
  func.func @squeeze(%x: tensor<1x4x8x8xi8>) -> tensor<1x4x1x1xi8> {
    %s = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<-3.0> : tensor<f32>} : tensor<f32>
    %sy = npu_graph.constant {value = dense<0.125> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
    %m = npu_graph.reduce_mean %dx {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
    %q = npu_graph.quantize %m, %sy, %z : (tensor<1x4x1x1xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x1x1xi8>
    func.return %q : tensor<1x4x1x1xi8>
  }
  // CHECK-LABEL: func.func @squeeze
  // CHECK-NOT:   npu_graph.dequantize
  // CHECK:       %m = npu_graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true, input_scale = 2.500000e-01 : f32, input_zero_point = -3.000000e+00 : f32} : (tensor<1x4x8x8xi8>) -> tensor<1x4x1x1xf32>
  // CHECK-NEXT:  %q = npu_graph.quantize %m
  // REMARK: remark: npu-fuse-qdq: applied: {{.*}}npu_graph.reduce_mean reads the i8 tensor and dequantizes it as it reads
  // REMARK: remark: npu-fuse-qdq: missed: {{.*}}npu_graph.reduce_mean kept in float from its 8-bit input

  // Any reduction, and a dequantize read by other ops too (it stays for them).
  func.func @sum(%x: tensor<2x6xui8>) -> (tensor<2xf32>, tensor<2x6xf32>) {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<128.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<2x6xui8>, tensor<f32>, tensor<f32>) -> tensor<2x6xf32>
    %r = npu_graph.reduce_sum %dx {axes = array<i64: 1>, keepdims = false} : (tensor<2x6xf32>) -> tensor<2xf32>
    func.return %r, %dx : tensor<2xf32>, tensor<2x6xf32>
  }
  // CHECK-LABEL: func.func @sum
  // CHECK:       %dx = npu_graph.dequantize %x
  // CHECK:       %r = npu_graph.reduce_sum %x {{{.*}}input_scale = 5.000000e-01 : f32, input_zero_point = 1.280000e+02 : f32} : (tensor<2x6xui8>) -> tensor<2xf32>

  // Must not fire: a per-channel dequantize; an i32 one (a bias); a float input.
  func.func @kept(%x: tensor<1x2x4x4xi8>, %b: tensor<2x4xi32>, %f: tensor<2x4xf32>) -> (tensor<1x2x1x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>) {
    %sc = npu_graph.constant {value = dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %sc, %z : (tensor<1x2x4x4xi8>, tensor<2x1x1xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    %m = npu_graph.reduce_mean %dx {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
    %db = npu_graph.dequantize %b, %s, %z : (tensor<2x4xi32>, tensor<f32>, tensor<f32>) -> tensor<2x4xf32>
    %mb = npu_graph.reduce_max %db {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
    %mf = npu_graph.reduce_min %f {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
    func.return %m, %mb, %mf : tensor<1x2x1x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  }
  // CHECK-LABEL: func.func @kept
  // CHECK-NOT:   input_scale
  // CHECK:       %m = npu_graph.reduce_mean %dx {axes = array<i64: 2, 3>, keepdims = true}
  // CHECK:       %mb = npu_graph.reduce_max %db {axes = array<i64: 1>, keepdims = true}
  // CHECK:       %mf = npu_graph.reduce_min %f {axes = array<i64: 1>, keepdims = true}
  // CHECK-NOT:   input_scale
}
