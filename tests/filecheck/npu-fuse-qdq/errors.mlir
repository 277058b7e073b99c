// RUN: not npu-opt %s -p npu-fuse-qdq 2>&1 | filecheck %s
// RUN: not npu-opt %s -p 'npu-fuse-qdq{mode=fixed}' 2>&1 | filecheck %s --check-prefix=OPTION

// The weights are in a weight file that is not there: the pass reading them (to
// compute in integers) says which file and fails, naming itself.
builtin.module attributes {npu.weights = "no-such-weights.npz"} {
  func.func @main(%x: tensor<1x4xi8>) -> tensor<1x2xi8> {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %dx = npu_graph.dequantize %x, %s, %z : (tensor<1x4xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4xf32>
    %w = npu_graph.constant {weight = "w"} : tensor<4x2xi8>
    %dw = npu_graph.dequantize %w, %s, %z : (tensor<4x2xi8>, tensor<f32>, tensor<f32>) -> tensor<4x2xf32>
    %y = npu_graph.matmul %dx, %dw : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    %q = npu_graph.quantize %y, %s, %z : (tensor<1x2xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2xi8>
    func.return %q : tensor<1x2xi8>
  }
}
// CHECK: error: npu-fuse-qdq: cannot read weight file '{{.*}}no-such-weights.npz' (module attribute npu.weights)
// OPTION: error: pass 'npu-fuse-qdq' has no option 'mode'
