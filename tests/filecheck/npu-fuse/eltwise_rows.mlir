// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s

// eltwise-chain takes a LayerNorm or softmax of its running value (its tiles keep the
// normalised dims whole, npu-tile's `row_dims`) and goes on after it: a QDQ
// transformer's residual add, LayerNorm and quantize read and write 8-bit tensors as
// one kernel instead of an f32 tensor out and back in twice (and the head's
// dequantize once: the chain's head is not read again as a dequantized operand).
// CHECK-LABEL: func.func @residual_layernorm
// CHECK:         %q2 = npu_graph.fused(%a, %s, %z, %b, %g, %beta) {kernel = "npu_graph.dequantize", rule = "eltwise-chain"}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %da = npu_graph.dequantize
// CHECK-NEXT:      %db = npu_graph.dequantize
// CHECK-NEXT:      %sum = npu_graph.add %da, %db
// CHECK-NEXT:      %q = npu_graph.quantize %sum
// CHECK-NEXT:      %d = npu_graph.dequantize %q
// CHECK-NEXT:      %ln = npu_graph.layernorm
// CHECK-NEXT:      %q2_1 = npu_graph.quantize %ln
// CHECK-NEXT:      npu_graph.yield %q2_1
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %q2
func.func @residual_layernorm(%a: tensor<1x8x16xi8>, %b: tensor<1x8x16xi8>, %g: tensor<16xf32>, %beta: tensor<16xf32>) -> tensor<1x8x16xi8> {
  %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %da = npu_graph.dequantize %a, %s, %z : (tensor<1x8x16xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8x16xf32>
  %db = npu_graph.dequantize %b, %s, %z : (tensor<1x8x16xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8x16xf32>
  %sum = npu_graph.add %da, %db : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  %q = npu_graph.quantize %sum, %s, %z : (tensor<1x8x16xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8x16xi8>
  %d = npu_graph.dequantize %q, %s, %z : (tensor<1x8x16xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8x16xf32>
  %ln = npu_graph.layernorm %d, %g, %beta {axis = 2 : i64, epsilon = 1.0e-12 : f32} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
  %q2 = npu_graph.quantize %ln, %s, %z : (tensor<1x8x16xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8x16xi8>
  func.return %q2 : tensor<1x8x16xi8>
}

// -----

// A softmax over the last axis after a mask add.
// CHECK-LABEL: func.func @masked_softmax
// CHECK:         npu_graph.fused(%x, %m) {kernel = "npu_graph.add", rule = "eltwise-chain"}
// CHECK:           npu_graph.add
// CHECK-NEXT:      npu_graph.softmax
// CHECK-NEXT:      npu_graph.yield
func.func @masked_softmax(%x: tensor<2x4x8xf32>, %m: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %a = npu_graph.add %x, %m : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %p = npu_graph.softmax %a {axis = -1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %p : tensor<2x4x8xf32>
}

// -----

// Not joined: the chain's value is read after the LayerNorm too; the LayerNorm reads
// the running value as its scale; a cube op's epilogue (its tiles split columns:
// the remark of `row_reduction_after`).
// CHECK-LABEL: func.func @read_twice
// CHECK:         npu_graph.fused
// CHECK:           npu_graph.relu
// CHECK-NEXT:      npu_graph.yield
// CHECK:         npu_graph.layernorm
// CHECK-LABEL: func.func @as_scale
// CHECK:         npu_graph.fused
// CHECK:           npu_graph.relu
// CHECK-NEXT:      npu_graph.yield
// CHECK:         npu_graph.layernorm
// CHECK-LABEL: func.func @after_matmul
// CHECK:         npu_graph.matmul
// CHECK:         npu_graph.yield
// CHECK:         npu_graph.layernorm
func.func @read_twice(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = npu_graph.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = npu_graph.relu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %ln = npu_graph.layernorm %r, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %ln, %r : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @as_scale(%x: tensor<8xf32>, %y: tensor<8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = npu_graph.add %x, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %r = npu_graph.relu %a : (tensor<8xf32>) -> tensor<8xf32>
  %ln = npu_graph.layernorm %z, %r {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %ln : tensor<4x8xf32>
}
func.func @after_matmul(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %m = npu_graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a = npu_graph.add %m, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %ln = npu_graph.layernorm %a, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %ln : tensor<4x8xf32>
}
