// RUN: %opt %s -p npu-fuse-qdq | filecheck %s
// RUN: %opt %s -p npu-fuse-qdq --remarks=- 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// avgpool(dequantize(x)) leaving its padding out of the divisor, x an 8-bit tensor
// dequantized per tensor: a sum pool (padding adds 0) divided by a constant map of each
// window's positions inside the input - the same f32 sum and count, with no NaN to
// mark the padding (an 8-bit tile cannot hold one).
builtin.module {
  // A ShuffleNet stage's shortcut: 3x3, stride 2, pads 1 over 6x6 -> 3x3; the
  // windows of the first row and column hold 2 rows (columns) of 3.
  func.func @shortcut(%x: tensor<1x4x6x6xi8>) -> tensor<1x4x3x3xi8> {
    %s = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<-3.0> : tensor<f32>} : tensor<f32>
    %sy = npu_graph.constant {value = dense<0.125> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x4x6x6xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x6x6xf32>
    %p = npu_graph.avgpool %dx {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x4x6x6xf32>) -> tensor<1x4x3x3xf32>
    %q = npu_graph.quantize %p, %sy, %z : (tensor<1x4x3x3xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x3x3xi8>
    func.return %q : tensor<1x4x3x3xi8>
  }
  // CHECK-LABEL: func.func @shortcut
  // CHECK:       %dx = npu_graph.dequantize %x
  // CHECK-NEXT:  %[[SUM:.*]] = npu_graph.sumpool %dx {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x6x6xf32>) -> tensor<1x4x3x3xf32>
  // CHECK-NEXT:  %[[N:.*]] = npu_graph.constant {value = dense<{{\[\[\[\[}}4.000000e+00, 6.000000e+00, 6.000000e+00], [6.000000e+00, 9.000000e+00, 9.000000e+00], [6.000000e+00, 9.000000e+00, 9.000000e+00]]]]> : tensor<1x1x3x3xf32>} : tensor<1x1x3x3xf32>
  // CHECK-NEXT:  %p = npu_graph.div %[[SUM]], %[[N]] : (tensor<1x4x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  // CHECK-NEXT:  %q = npu_graph.quantize %p
  // CHECK-NOT:   npu_graph.avgpool
  // REMARK: remark: npu-fuse-qdq: applied: {{.*}}the average pool is a sum pool divided by each window's count (an 8-bit tile has no NaN to mark padding): one kernel on the i8 tensor

  // End padding only (Inception's 7x7 pool with ceil mode), a uint8 input, a 2x2 dilation.
  func.func @ends(%x: tensor<1x2x7x7xui8>, %y: tensor<1x2x8x8xui8>) -> (tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>) {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<128.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x2x7x7xui8>, tensor<f32>, tensor<f32>) -> tensor<1x2x7x7xf32>
    %p = npu_graph.avgpool %dx {kernel = array<i64: 7, 7>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x2x7x7xf32>) -> tensor<1x2x2x2xf32>
    %dy = npu_graph.dequantize %y, %s, %z : (tensor<1x2x8x8xui8>, tensor<f32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    %d = npu_graph.avgpool %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>, count_include_pad = false} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
    func.return %p, %d : tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>
  }
  // CHECK-LABEL: func.func @ends
  // CHECK:       npu_graph.sumpool %dx {kernel = array<i64: 7, 7>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>}
  // CHECK-NEXT:  npu_graph.constant {value = dense<{{\[\[\[\[}}4.900000e+01, 4.200000e+01], [4.200000e+01, 3.600000e+01]]]]>
  // CHECK:       npu_graph.sumpool %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>}
  // CHECK-NEXT:  npu_graph.constant {value = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 2.000000e+00, 2.000000e+00], [2.000000e+00, 4.000000e+00

  // Must not fire: padding counted in the divisor; no padding; a float input; a
  // per-channel dequantize; windows holding no position of the input (a 1x1 kernel
  // over the padding).
  func.func @kept(%x: tensor<1x2x6x6xi8>, %f: tensor<1x2x6x6xf32>) -> (tensor<1x2x6x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>, tensor<1x2x8x8xf32>) {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %sc = npu_graph.constant {value = dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x2x6x6xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x6x6xf32>
    %incl = npu_graph.avgpool %dx {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = true} : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
    %nopad = npu_graph.avgpool %dx {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
    %float = npu_graph.avgpool %f {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
    %dc = npu_graph.dequantize %x, %sc, %z : (tensor<1x2x6x6xi8>, tensor<2x1x1xf32>, tensor<f32>) -> tensor<1x2x6x6xf32>
    %chan = npu_graph.avgpool %dc {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
    %empty = npu_graph.avgpool %dx {kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x8x8xf32>
    func.return %incl, %nopad, %float, %chan, %empty : tensor<1x2x6x6xf32>, tensor<1x2x4x4xf32>, tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>, tensor<1x2x8x8xf32>
  }
  // CHECK-LABEL: func.func @kept
  // CHECK-NOT:   npu_graph.sumpool
  // CHECK:       %incl = npu_graph.avgpool %dx
  // CHECK:       %nopad = npu_graph.avgpool %dx
  // CHECK:       %float = npu_graph.avgpool %f
  // CHECK:       %chan = npu_graph.avgpool %dc
  // CHECK:       %empty = npu_graph.avgpool %dx
  // CHECK-NOT:   npu_graph.sumpool
}
