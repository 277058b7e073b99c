// RUN: not npu-opt %s -p npu-tile-loops,npu-bufferize 2>&1 | filecheck %s

// Untiled graph ops cannot be bufferized: the diagnostic says what to run first.
builtin.module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32> loc("act")
    func.return %r : tensor<4xf32>
  }
}
// CHECK: error: npu-bufferize: expected only npu_tile.kernel and constants (run npu-tile first) at 'npu_graph.relu' (ONNX node act)
