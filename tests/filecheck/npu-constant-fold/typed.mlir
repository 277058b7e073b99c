// RUN: %opt %s -p npu-constant-fold | filecheck %s
// npu-constant-fold keeps element types: quantize of constants folds into an i8
// constant, dequantize of an i8 constant into an f32 one, data movement of i8 into
// i8, a cast to f16 into an f16 constant (rounded), an integer matmul into i32.

// CHECK-LABEL: func.func @typed
// CHECK-DAG:   npu_graph.constant {value = dense<[-128, -2, 0, 3, 127]> : tensor<5xi8>} : tensor<5xi8>
// CHECK-DAG:   npu_graph.constant {value = dense<[3, 0, -2]> : tensor<3xi8>} : tensor<3xi8>
// CHECK-DAG:   npu_graph.constant {value = dense<[-1.000000e+00, 0.000000e+00, 1.500000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-DAG:   npu_graph.constant {value = dense<[1.000000e+00, 3.332520e-01, 2.000000e+00]> : tensor<3xf16>} : tensor<3xf16>
// CHECK-DAG:   npu_graph.constant {value = dense<{{\[\[}}7, -5]]> : tensor<1x2xi32>} : tensor<1x2xi32>
// CHECK-NOT:   npu_graph.quantize
// CHECK-NOT:   npu_graph.dequantize
// CHECK-NOT:   npu_graph.matmul
func.func @typed() -> (tensor<5xi8>, tensor<3xi8>, tensor<3xf32>, tensor<3xf16>, tensor<1x2xi32>) {
  %x = npu_graph.constant {value = dense<[-300.0, -0.45, 0.05, 0.75, 99.0]> : tensor<5xf32>} : tensor<5xf32>
  %s = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
  %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %q = npu_graph.quantize %x, %s, %z : (tensor<5xf32>, tensor<f32>, tensor<f32>) -> tensor<5xi8>
  %i = npu_graph.constant {value = dense<[-2, 0, 3]> : tensor<3xi8>} : tensor<3xi8>
  %r = npu_graph.slice %i {starts = array<i64: 2>, ends = array<i64: -1>, steps = array<i64: -1>} : (tensor<3xi8>) -> tensor<3xi8>
  %h = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %d = npu_graph.dequantize %i, %h, %z : (tensor<3xi8>, tensor<f32>, tensor<f32>) -> tensor<3xf32>
  %f = npu_graph.constant {value = dense<[1.0, 0.3333333, 2.0]> : tensor<3xf32>} : tensor<3xf32>
  %c = npu_graph.cast %f : (tensor<3xf32>) -> tensor<3xf16>
  %a = npu_graph.constant {value = dense<[[1, 2]]> : tensor<1x2xui8>} : tensor<1x2xui8>
  %b = npu_graph.constant {value = dense<[[3, -1], [2, -2]]> : tensor<2x2xi8>} : tensor<2x2xi8>
  %m = npu_graph.matmul %a, %b : (tensor<1x2xui8>, tensor<2x2xi8>) -> tensor<1x2xi32>
  func.return %q, %r, %d, %c, %m : tensor<5xi8>, tensor<3xi8>, tensor<3xf32>, tensor<3xf16>, tensor<1x2xi32>
}
