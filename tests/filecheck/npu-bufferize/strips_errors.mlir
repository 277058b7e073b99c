// RUN: not npu-opt %s -p npu-bufferize 2>&1 | filecheck %s

// A strip group (loops "h") whose ops are not a chain: the second op reads a tensor
// that varies over H besides the running one.
builtin.module {
  func.func @main(%x: tensor<1x4x8x8xf32>, %y: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    %r = npu_tile.kernel "g"(%x, %y) {kind = "group", loops = "h", tile = array<i64: 4>, grid = array<i64: 2>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, dram_bytes = 0 : i64, parts = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%a: tensor<1x4x8x8xf32>, %b: tensor<1x4x8x8xf32>):
      %s = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      %t = npu_graph.add %s, %b : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %t : tensor<1x4x8x8xf32>
    } loc("g")
    func.return %r : tensor<1x4x8x8xf32>
  }
}
// CHECK: error: npu-bufferize: kernel 'g': a strip group must be conv, pool, elementwise, channel-shuffle and channel-concat ops over one input at 'npu_tile.kernel' (ONNX node g)
