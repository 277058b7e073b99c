// RUN: not npu-opt %s -p npu-tile 2>&1 | filecheck %s

// Grouped convolution has no tiling yet: a diagnostic, not a crash.
builtin.module {
  func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<4x1x3x3xf32>
    %y = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>, group = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32> loc("dw")
    func.return %y : tensor<1x4x8x8xf32>
  }
}
// CHECK: error: npu-tile: kernel 'dw': grouped convolution is not supported yet at 'npu_graph.conv2d' (ONNX node dw)
