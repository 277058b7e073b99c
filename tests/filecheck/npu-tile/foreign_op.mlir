// RUN: %opt %s -p npu-tile --verify-diagnostics -o /dev/null

// An op of another dialect left in the graph (a plugin's op whose lowering pass did not
// run) is named, with what to do; not a later pass's confusion.
builtin.module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{npu-tile: 'arith.negf' is not an npu_graph op, so it cannot be tiled: no pass lowered it (a plugin's op needs its lowering pass first, e.g. -p 'builtin.module(my-lower-pass,npu-default)') at 'arith.negf' (ONNX node square0)}}
    %y = arith.negf %x : tensor<4xf32> loc("square0")
    func.return %y : tensor<4xf32>
  }
}
