// RUN: %opt %s -p npu-tile --verify-diagnostics -o /dev/null

// A prologue in front of a padded conv (not something npu-fuse forms: the padding
// zeros would go through the relu) is refused, naming the kernel.
builtin.module {
  func.func @main(%x: tensor<1x8x4x4xf32>) -> tensor<1x4x4x4xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<4x8x3x3xf32>
    // expected-error @+1 {{npu-tile: kernel 'pre': a conv prologue needs a conv without padding (padding zeros would go through it) at 'npu_graph.fused' (ONNX node pre)}}
    %y = npu_graph.fused(%x, %w) {kernel = "pre", rule = "conv-prologue"} : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x4x4xf32> {
    ^bb0(%a: tensor<1x8x4x4xf32>, %b: tensor<4x8x3x3xf32>):
      %r = npu_graph.relu %a : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
      %c = npu_graph.conv2d %r, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x4x4xf32>
      npu_graph.yield %c : tensor<1x4x4x4xf32>
    } loc("pre")
    func.return %y : tensor<1x4x4x4xf32>
  }
}
