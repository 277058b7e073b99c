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
