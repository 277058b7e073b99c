// A misspelt or mistyped option is a usage error (exit 2) from npu-opt, naming the pass.
// RUN: not npu-opt %s -p 'npu-hoist-pool{biases=false}' 2>&1 | filecheck %s --check-prefix=NO-OPTION
// NO-OPTION:      error: pass 'npu-hoist-pool' has no option 'biases'
// NO-OPTION-NEXT: hint: its options: bias
// RUN: not npu-opt %s -p 'npu-hoist-pool{bias=maybe}' 2>&1 | filecheck %s --check-prefix=BAD-VALUE
// BAD-VALUE: error: pass 'npu-hoist-pool': bad value 'maybe' for option 'bias'
// Graph IR that does not verify is reported before the pass runs (exit 1), at the op
// (--verify-diagnostics checks the expected-error annotation).
// RUN: %opt %s --split-input-file -p npu-hoist-pool --verify-diagnostics -o /dev/null

func.func @f(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %r = npu_graph.relu %x : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %y = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}

// -----

func.func @g(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %r = npu_graph.relu %x : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  // expected-error @+1 {{'npu_graph.maxpool': begin pads [2, 2] must be smaller than the kernel [2, 2]}}
  %y = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}
