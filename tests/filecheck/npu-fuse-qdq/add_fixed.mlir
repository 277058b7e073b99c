// RUN: %opt %s -p npu-fuse-qdq | filecheck %s

// On a chip whose requantization is fixed-point (`requant = fixed`), the integer add
// is TFLite's int8 ADD: the qadd says so.
builtin.module attributes {npu.arch = #npu.arch<requant = fixed>} {
  func.func @residual(%a: tensor<1x4x8x8xi8>, %b: tensor<1x4x8x8xi8>) -> tensor<1x4x8x8xi8> {
    %s = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %s, %z : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
    %db = npu_graph.dequantize %b, %s, %z : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
    %sum = npu_graph.add %da, %db : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %q = npu_graph.quantize %sum, %s, %z : (tensor<1x4x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xi8>
    func.return %q : tensor<1x4x8x8xi8>
  }
  // CHECK-LABEL: func.func @residual
  // CHECK-NEXT:  %q = npu_graph.qadd %a, %b {{{.*}}, mode = "fixed"} : (tensor<1x4x8x8xi8>, tensor<1x4x8x8xi8>) -> tensor<1x4x8x8xi8>
  // CHECK-NEXT:  func.return %q
}
