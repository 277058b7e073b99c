// `--verify-diagnostics` as mlir-opt has it: `expected-error`, `expected-warning`,
// `expected-remark` and `expected-note` annotations say which diagnostics each chunk
// must produce and where (@+N, @-N, @above, @below, @unknown, or the line itself); all
// met and nothing else produced is exit 0, with no output on stderr.
// RUN: %opt %s --split-input-file --verify-diagnostics -o /dev/null 2>&1 | filecheck %s --allow-empty
// CHECK-NOT: {{.}}

// A verifier error, at the op.
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{input has 3 channels but weight expects 2 x group 1}}
  %0 = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// The same, annotated below the line, and on the line itself.
func.func @f(%x: tensor<4xf32>) -> tensor<5xf32> {
  %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<5xf32>
  // expected-error @above {{broadcasting the operands gives shape [4], but the result type has [5]}}
  func.return %r : tensor<5xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<5xf32> {
  %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<5xf32> // expected-error {{result type has [5]}}
  func.return %r : tensor<5xf32>
}

// -----

// A parse error, at the unknown op's name; a regex part between {{ and }}.
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error-re @below {{unknown operation 'npu_graph.{{[a-z]+}}'}}
  %r = npu_graph.rleu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// An undefined value, at its use; @-N counts back.
func.func @f() -> tensor<4xf32> {
  func.return %nope : tensor<4xf32>
  // expected-error @-1 {{use of undefined value '%nope'}}
}

// -----

// A chunk without error and without annotations checks nothing.
func.func @ok(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
