// RUN: %opt %s --split-input-file -p npu-tile --verify-diagnostics -o /dev/null

// Nothing fits in 128 bytes of SRAM: the diagnostic names the kernel and its ONNX node.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 128>} {
  func.func @main(%x: tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<64x64x3x3xf32>
    // expected-error-re @+1 {{npu-tile: kernel '/conv1/Conv': no tile fits sram_bytes=128: the smallest candidate needs {{[0-9]+}} bytes at 'npu_graph.conv2d' (ONNX node /conv1/Conv)}}
    %y = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32> loc("/conv1/Conv")
    func.return %y : tensor<1x64x8x8xf32>
  }
}

