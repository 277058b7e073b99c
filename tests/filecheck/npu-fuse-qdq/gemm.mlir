// RUN: %opt %s -p npu-fuse-qdq | filecheck %s

// A QDQ Gemm (transB, as PyTorch's Linear exports) with a float bias: the weight is
// transposed once at compile time, the bias quantized with scale sx * sw per column and
// added in i32 before the requantize.
builtin.module {
  func.func @gemm(%a: tensor<2x3xi8>) -> tensor<2x2xi8> {
    %sa = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z0 = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %sa, %z0 : (tensor<2x3xi8>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
    %w = npu_graph.constant {value = dense<[[1, 2, 3], [-4, 5, -6]]> : tensor<2x3xi8>} : tensor<2x3xi8>
    %sw = npu_graph.constant {value = dense<[[0.5], [0.25]]> : tensor<2x1xf32>} : tensor<2x1xf32>
    %dw = npu_graph.dequantize %w, %sw, %z0 : (tensor<2x3xi8>, tensor<2x1xf32>, tensor<f32>) -> tensor<2x3xf32>
    %c = npu_graph.constant {value = dense<[1.0, -2.0]> : tensor<2xf32>} : tensor<2xf32>
    %y = npu_graph.gemm %da, %dw, %c {trans_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x2xf32>
    %sy = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %q = npu_graph.quantize %y, %sy, %z0 : (tensor<2x2xf32>, tensor<f32>, tensor<f32>) -> tensor<2x2xi8>
    func.return %q : tensor<2x2xi8>
  }
  // CHECK-LABEL: func.func @gemm
  // CHECK:      %[[W:.*]] = npu_graph.constant {value = dense<{{\[}}[1, -4], [2, 5], [3, -6]]> : tensor<3x2xi8>}
  // CHECK:      %[[ACC:.*]] = npu_graph.matmul %a, %[[W]] : (tensor<2x3xi8>, tensor<3x2xi8>) -> tensor<2x2xi32>
  // CHECK:      %[[B:.*]] = npu_graph.constant {value = dense<[4, -16]> : tensor<2xi32>}
  // CHECK:      %[[SUM:.*]] = npu_graph.add %[[ACC]], %[[B]] : (tensor<2x2xi32>, tensor<2xi32>) -> tensor<2x2xi32>
  // CHECK:      %[[M:.*]] = npu_graph.constant {value = dense<[1.000000e+00, 5.000000e-01]> : tensor<2xf32>}
  // CHECK:      %q = npu_graph.requantize %[[SUM]], %[[M]], %{{.*}} : (tensor<2x2xi32>, tensor<2xf32>, tensor<f32>) -> tensor<2x2xi8>
  // CHECK-NOT:  npu_graph.dequantize
}
