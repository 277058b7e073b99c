// RUN: %opt %s --split-input-file -p npu-canonicalize | filecheck %s
// npu-canonicalize folds reshape chains and removes identity reshapes.

// A chain of two reshapes becomes one reshape of the original input.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %b = npu_graph.reshape %x : (tensor<1x4x4x4xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %b
func.func @chain(%x: tensor<1x4x4x4xf32>) -> tensor<4x16xf32> {
  %a = npu_graph.reshape %x : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
  %b = npu_graph.reshape %a : (tensor<1x64xf32>) -> tensor<4x16xf32>
  func.return %b : tensor<4x16xf32>
}

// -----

// Longer chains fold completely.
// CHECK-LABEL: func.func @chain3
// CHECK-NEXT:    %c = npu_graph.reshape %x : (tensor<1x4x4x4xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %c
func.func @chain3(%x: tensor<1x4x4x4xf32>) -> tensor<4x16xf32> {
  %a = npu_graph.reshape %x : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
  %b = npu_graph.reshape %a : (tensor<1x64xf32>) -> tensor<64xf32>
  %c = npu_graph.reshape %b : (tensor<64xf32>) -> tensor<4x16xf32>
  func.return %c : tensor<4x16xf32>
}

// -----

// A reshape to the input's own shape is removed; its users take the input.
// CHECK-LABEL: func.func @identity
// CHECK-NEXT:    %r = npu_graph.relu %x
// CHECK-NEXT:    func.return %r
func.func @identity(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %a = npu_graph.reshape %x : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = npu_graph.relu %a : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// -----

// Both patterns together: a chain that comes back to the input shape vanishes.
// CHECK-LABEL: func.func @there_and_back
// CHECK-NEXT:    func.return %x
func.func @there_and_back(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %a = npu_graph.reshape %x : (tensor<4x16xf32>) -> tensor<64xf32>
  %b = npu_graph.reshape %a : (tensor<64xf32>) -> tensor<4x16xf32>
  func.return %b : tensor<4x16xf32>
}

// -----

// The inner reshape has another user, so it stays; the outer one still reads %x.
// CHECK-LABEL: func.func @shared
// CHECK-NEXT:    %a = npu_graph.reshape %x : (tensor<4x16xf32>) -> tensor<64xf32>
// CHECK-NEXT:    %b = npu_graph.reshape %x : (tensor<4x16xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    func.return %a, %b
func.func @shared(%x: tensor<4x16xf32>) -> (tensor<64xf32>, tensor<8x8xf32>) {
  %a = npu_graph.reshape %x : (tensor<4x16xf32>) -> tensor<64xf32>
  %b = npu_graph.reshape %a : (tensor<64xf32>) -> tensor<8x8xf32>
  func.return %a, %b : tensor<64xf32>, tensor<8x8xf32>
}

// -----

// Does not fire: a single reshape that changes the shape.
// CHECK-LABEL: func.func @changes_shape
// CHECK-NEXT:    %a = npu_graph.reshape %x : (tensor<4x16xf32>) -> tensor<64xf32>
// CHECK-NEXT:    func.return %a
func.func @changes_shape(%x: tensor<4x16xf32>) -> tensor<64xf32> {
  %a = npu_graph.reshape %x : (tensor<4x16xf32>) -> tensor<64xf32>
  func.return %a : tensor<64xf32>
}

// -----

// Does not fire: the reshape's input comes from another op.
// CHECK-LABEL: func.func @input_not_reshape
// CHECK-NEXT:    %r = npu_graph.relu %x
// CHECK-NEXT:    %a = npu_graph.reshape %r : (tensor<4x16xf32>) -> tensor<64xf32>
// CHECK-NEXT:    func.return %a
func.func @input_not_reshape(%x: tensor<4x16xf32>) -> tensor<64xf32> {
  %r = npu_graph.relu %x : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %a = npu_graph.reshape %r : (tensor<4x16xf32>) -> tensor<64xf32>
  func.return %a : tensor<64xf32>
}

// -----

// gemm alpha/beta become elementwise ops the matmul epilogue can fuse.
builtin.module {
  func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %c: tensor<3xf32>) -> tensor<4x3xf32> {
    %y = npu_graph.gemm %a, %b, %c {alpha = 2.0 : f32, beta = 0.5 : f32} : (tensor<4x8xf32>, tensor<8x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    func.return %y : tensor<4x3xf32>
  }
}
// CHECK-LABEL: func.func @f(
// CHECK:       %[[G:.*]] = npu_graph.gemm %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK:       %[[AL:.*]] = npu_graph.constant {value = dense<2.000000e+00> : tensor<1xf32>} : tensor<1xf32>
// CHECK:       %[[S:.*]] = npu_graph.mul %[[G]], %[[AL]]
// CHECK:       %[[BE:.*]] = npu_graph.constant {value = dense<5.000000e-01> : tensor<1xf32>} : tensor<1xf32>
// CHECK:       %[[C:.*]] = npu_graph.mul %c, %[[BE]]
// CHECK:       %[[Y:.*]] = npu_graph.add %[[S]], %[[C]]
// CHECK:       func.return %[[Y]]

// -----

// Without a C, beta scales nothing: it goes (the tiler takes no beta; found by the fuzzer).
builtin.module {
  func.func @no_c(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
    %y = npu_graph.gemm %a, %b {beta = -2.0 : f32} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    func.return %y : tensor<4x3xf32>
  }
}
// CHECK-LABEL: func.func @no_c(
// CHECK-NEXT:  %[[G:.*]] = npu_graph.gemm %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:  func.return %[[G]]

// -----

// Plain gemm and 2-D matmul: nothing to do.
builtin.module {
  func.func @g(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
    %y = npu_graph.gemm %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %z = npu_graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %s = npu_graph.add %y, %z : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return %s : tensor<4x3xf32>
  }
}
// CHECK-LABEL: func.func @g(
// CHECK-NEXT:  npu_graph.gemm %a, %b :
// CHECK-NEXT:  npu_graph.matmul %a, %b :
// CHECK-NEXT:  npu_graph.add

// -----

// A 3-D activation times a 2-D weight (a transformer linear layer) is a 2-D
// matmul on the flattened rows; a 1-D vector operand becomes a row.
builtin.module {
  func.func @h(%x: tensor<2x5x8xf32>, %w: tensor<8x3xf32>, %v: tensor<8xf32>) -> (tensor<2x5x3xf32>, tensor<3xf32>) {
    %y = npu_graph.matmul %x, %w : (tensor<2x5x8xf32>, tensor<8x3xf32>) -> tensor<2x5x3xf32>
    %z = npu_graph.matmul %v, %w : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
    func.return %y, %z : tensor<2x5x3xf32>, tensor<3xf32>
  }
}
// CHECK-LABEL: func.func @h(
// CHECK:       %[[X2:.*]] = npu_graph.reshape %x : (tensor<2x5x8xf32>) -> tensor<10x8xf32>
// CHECK-NEXT:  %[[M:.*]] = npu_graph.matmul %[[X2]], %w : (tensor<10x8xf32>, tensor<8x3xf32>) -> tensor<10x3xf32>
// CHECK-NEXT:  %[[Y:.*]] = npu_graph.reshape %[[M]] : (tensor<10x3xf32>) -> tensor<2x5x3xf32>
// CHECK:       %[[V2:.*]] = npu_graph.reshape %v : (tensor<8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT:  %[[M2:.*]] = npu_graph.matmul %[[V2]], %w : (tensor<1x8xf32>, tensor<8x3xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:  npu_graph.reshape %[[M2]] : (tensor<1x3xf32>) -> tensor<3xf32>

// -----

// A batched B (rank 3) needs a batched kernel: left alone here.
builtin.module {
  func.func @k(%x: tensor<2x5x8xf32>, %w: tensor<2x8x3xf32>) -> tensor<2x5x3xf32> {
    %y = npu_graph.matmul %x, %w : (tensor<2x5x8xf32>, tensor<2x8x3xf32>) -> tensor<2x5x3xf32>
    func.return %y : tensor<2x5x3xf32>
  }
}
// CHECK-LABEL: func.func @k(
// CHECK-NEXT:  npu_graph.matmul %x, %w : (tensor<2x5x8xf32>, tensor<2x8x3xf32>) -> tensor<2x5x3xf32>

// -----

// alpha alone scales the product, not C: C is added after the scaling.
builtin.module {
  func.func @alpha_only(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %c: tensor<3xf32>) -> tensor<4x3xf32> {
    %y = npu_graph.gemm %a, %b, %c {alpha = 2.0 : f32} : (tensor<4x8xf32>, tensor<8x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    func.return %y : tensor<4x3xf32>
  }
}
// CHECK-LABEL: func.func @alpha_only(
// CHECK:       %[[G:.*]] = npu_graph.gemm %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK:       %[[AL:.*]] = npu_graph.constant {value = dense<2.000000e+00> : tensor<1xf32>} : tensor<1xf32>
// CHECK:       %[[S:.*]] = npu_graph.mul %[[G]], %[[AL]]
// CHECK-NEXT:  %[[Y:.*]] = npu_graph.add %[[S]], %c
// CHECK-NEXT:  func.return %[[Y]]
