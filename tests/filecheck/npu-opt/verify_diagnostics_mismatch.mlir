// `--verify-diagnostics` reports every mismatch at its line, chunk by chunk, and exits 1:
// a diagnostic no annotation expects (with its source line), an annotation no diagnostic
// met (at the annotation, saying where one was if it was elsewhere).
// RUN: not npu-opt %s --split-input-file --verify-diagnostics -o /dev/null 2>&1 | filecheck %s

// The wrong line: the error is on the op's line, the annotation points below it.
func.func @f(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+2 {{result type has [5]}}
  %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}
// CHECK:      verify_diagnostics_mismatch.mlir:9:3: error: unexpected error: 'npu_graph.relu': broadcasting the operands gives shape [4], but the result type has [5]
// CHECK-NEXT:   %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<5xf32>
// CHECK-NEXT:   ^^
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:8:6: error: expected error "result type has [5]" at line 10 was not produced; one was, at line 9

// -----

// An error expected where the input is fine.
func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{no such error}}
  %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:21:6: error: expected error "no such error" at line 22 was not produced

// -----

// An error no annotation expects.
func.func @h() -> tensor<4xf32> {
  func.return %nope : tensor<4xf32>
}
// CHECK-NEXT: verify_diagnostics_mismatch.mlir:31:15: error: unexpected error: use of undefined value '%nope'

// -----

// A warning expected that nothing emits; the right error message with the wrong severity.
func.func @i(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-warning @+1 {{result type has [5]}}
  %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}
// CHECK:      error: expected warning "result type has [5]" at line 40 was not produced
// CHECK-NEXT: error: --verify-diagnostics: the diagnostics of 4 of the 4 chunks do not match the expected-* annotations
