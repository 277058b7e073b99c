// A convolution no tile of which fits a 128-byte SRAM (npu-tile's diagnostic, at the op).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 128>} {
  func.func @main(%x: tensor<1x64x8x8xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32> attributes {npu.inputs = ["x", "w"], npu.outputs = ["y"]} {
    %y = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32> loc("conv")
    func.return %y : tensor<1x64x8x8xf32>
  }
}
