// RUN: %opt %s -p npu-fuse-qdq | filecheck %s
// In the arch's fixed requant mode the qmul is TFLite's int8 MUL (`mode = "fixed"`).
builtin.module attributes {npu.arch = #npu.arch<requant = fixed>} {
  func.func @fixed(%a: tensor<8xi8>, %b: tensor<8xi8>) -> tensor<8xi8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %s, %z : (tensor<8xi8>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
    %db = npu_graph.dequantize %b, %s, %z : (tensor<8xi8>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
    %p = npu_graph.mul %da, %db : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %q = npu_graph.quantize %p, %s, %z : (tensor<8xf32>, tensor<f32>, tensor<f32>) -> tensor<8xi8>
    func.return %q : tensor<8xi8>
  }
}
// CHECK-LABEL: func.func @fixed
// CHECK-NEXT:  %q = npu_graph.qmul %a, %b {{{.*}}mode = "fixed"} : (tensor<8xi8>, tensor<8xi8>) -> tensor<8xi8>
