// RUN: %opt %s -p npu-tile-loops,npu-bufferize --verify-diagnostics -o /dev/null

// Untiled graph ops cannot be bufferized: the diagnostic says what to run first.
builtin.module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{npu-bufferize: expected only npu_tile.kernel and constants (run npu-tile first) at 'npu_graph.relu' (ONNX node act)}}
    %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32> loc("act")
    func.return %r : tensor<4xf32>
  }
}
