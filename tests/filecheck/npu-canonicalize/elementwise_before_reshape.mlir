// RUN: %opt %s --split-input-file -p npu-canonicalize | filecheck %s
// ew(reshape(x), c) -> reshape(ew(x, c')) for a rank-raising reshape that keeps the
// last dim: a 3-D Linear (MatmulTo2D's 2-D matmul, then a reshape back) gets its
// bias and activation right after the matmul, where npu-fuse makes them its epilogue.

// The exported Linear: add(bias, reshape(matmul)), then a GELU chain: every op moves
// before the reshape, which ends up last.
// CHECK-LABEL: func.func @linear_gelu
// CHECK-NEXT:    %[[X2:.*]] = npu_graph.reshape %x : (tensor<1x16x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    %[[MM:.*]] = npu_graph.matmul %[[X2]], %w : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:    %[[B:.*]] = npu_graph.add %b, %[[MM]] : (tensor<32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:    %[[E:.*]] = npu_graph.erf %[[B]] : (tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:    %[[G:.*]] = npu_graph.mul %[[B]], %[[E]] : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:    %[[Y:.*]] = npu_graph.reshape %[[G]] : (tensor<16x32xf32>) -> tensor<1x16x32xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @linear_gelu(%x: tensor<1x16x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<1x16x32xf32> {
  %m = npu_graph.matmul %x, %w : (tensor<1x16x64xf32>, tensor<64x32xf32>) -> tensor<1x16x32xf32>
  %a = npu_graph.add %b, %m : (tensor<32xf32>, tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
  %e = npu_graph.erf %a : (tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
  %g = npu_graph.mul %a, %e : (tensor<1x16x32xf32>, tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
  func.return %g : tensor<1x16x32xf32>
}

// -----

// A residual (full-size operand) is viewed with x's shape; a [1, 1, 32] scale
// broadcasting along the last dim only becomes [32].
// CHECK-LABEL: func.func @residual
// CHECK:         %[[MM:.*]] = npu_graph.matmul
// CHECK-NEXT:    %[[R2:.*]] = npu_graph.reshape %h : (tensor<1x16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:    %[[ADD:.*]] = npu_graph.add %[[MM]], %[[R2]] : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:    %[[S1:.*]] = npu_graph.reshape %s : (tensor<1x1x32xf32>) -> tensor<32xf32>
// CHECK-NEXT:    %[[MUL:.*]] = npu_graph.mul %[[ADD]], %[[S1]] : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:    npu_graph.reshape %[[MUL]] : (tensor<16x32xf32>) -> tensor<1x16x32xf32>
func.func @residual(%x: tensor<1x16x64xf32>, %w: tensor<64x32xf32>, %h: tensor<1x16x32xf32>, %s: tensor<1x1x32xf32>) -> tensor<1x16x32xf32> {
  %m = npu_graph.matmul %x, %w : (tensor<1x16x64xf32>, tensor<64x32xf32>) -> tensor<1x16x32xf32>
  %a = npu_graph.add %m, %h : (tensor<1x16x32xf32>, tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
  %p = npu_graph.mul %a, %s : (tensor<1x16x32xf32>, tensor<1x1x32xf32>) -> tensor<1x16x32xf32>
  func.return %p : tensor<1x16x32xf32>
}

// -----

// Must not fire: the reshape splits the last dim (heads), the reshape lowers the rank,
// or the other operand broadcasts along a middle dim.
// CHECK-LABEL: func.func @declines
// CHECK-NEXT:    %[[H:.*]] = npu_graph.reshape %x : (tensor<16x64xf32>) -> tensor<16x4x16xf32>
// CHECK-NEXT:    npu_graph.relu %[[H]] : (tensor<16x4x16xf32>) -> tensor<16x4x16xf32>
// CHECK-NEXT:    %[[L:.*]] = npu_graph.reshape %y : (tensor<1x16x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    npu_graph.relu %[[L]] : (tensor<16x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    %[[M:.*]] = npu_graph.reshape %x : (tensor<16x64xf32>) -> tensor<1x16x64xf32>
// CHECK-NEXT:    npu_graph.add %[[M]], %c : (tensor<1x16x64xf32>, tensor<1x16x1xf32>) -> tensor<1x16x64xf32>
func.func @declines(%x: tensor<16x64xf32>, %y: tensor<1x16x64xf32>, %c: tensor<1x16x1xf32>) -> (tensor<16x4x16xf32>, tensor<16x64xf32>, tensor<1x16x64xf32>) {
  %h = npu_graph.reshape %x : (tensor<16x64xf32>) -> tensor<16x4x16xf32>
  %r = npu_graph.relu %h : (tensor<16x4x16xf32>) -> tensor<16x4x16xf32>
  %l = npu_graph.reshape %y : (tensor<1x16x64xf32>) -> tensor<16x64xf32>
  %s = npu_graph.relu %l : (tensor<16x64xf32>) -> tensor<16x64xf32>
  %m = npu_graph.reshape %x : (tensor<16x64xf32>) -> tensor<1x16x64xf32>
  %a = npu_graph.add %m, %c : (tensor<1x16x64xf32>, tensor<1x16x1xf32>) -> tensor<1x16x64xf32>
  func.return %r, %s, %a : tensor<16x4x16xf32>, tensor<16x64xf32>, tensor<1x16x64xf32>
}

// -----

// A QDQ Linear (npu-fuse-qdq's integer matmul, then the reshape back): its requantize
// and the lookup table after it (per channel of the last dim: its axis follows) move
// before the reshape, the epilogue of the product; the dequantize of the result stays
// after it (moved, it would widen the product's result to f32).
// CHECK-LABEL: func.func @qdq_linear
// CHECK:         %[[MM:.*]] = npu_graph.matmul
// CHECK-NEXT:    %[[RQ:.*]] = npu_graph.requantize %[[MM]], %m, %z : (tensor<16x32xi32>, tensor<32xf32>, tensor<f32>) -> tensor<16x32xi8>
// CHECK-NEXT:    %[[T:.*]] = npu_graph.table %[[RQ]], %lut {axis = 1 : i64} : (tensor<16x32xi8>, tensor<32x256xi8>) -> tensor<16x32xi8>
// CHECK-NEXT:    %[[Y:.*]] = npu_graph.reshape %[[T]] : (tensor<16x32xi8>) -> tensor<1x16x32xi8>
// CHECK-NEXT:    %[[D:.*]] = npu_graph.dequantize %[[Y]], %s, %z : (tensor<1x16x32xi8>, tensor<f32>, tensor<f32>) -> tensor<1x16x32xf32>
// CHECK-NEXT:    func.return %[[D]]
func.func @qdq_linear(%x: tensor<1x16x64xi8>, %w: tensor<64x32xi8>, %m: tensor<32xf32>, %z: tensor<f32>, %s: tensor<f32>, %lut: tensor<32x256xi8>) -> tensor<1x16x32xf32> {
  %mm = npu_graph.matmul %x, %w : (tensor<1x16x64xi8>, tensor<64x32xi8>) -> tensor<1x16x32xi32>
  %rq = npu_graph.requantize %mm, %m, %z : (tensor<1x16x32xi32>, tensor<32xf32>, tensor<f32>) -> tensor<1x16x32xi8>
  %t = npu_graph.table %rq, %lut {axis = 2 : i64} : (tensor<1x16x32xi8>, tensor<32x256xi8>) -> tensor<1x16x32xi8>
  %d = npu_graph.dequantize %t, %s, %z : (tensor<1x16x32xi8>, tensor<f32>, tensor<f32>) -> tensor<1x16x32xf32>
  func.return %d : tensor<1x16x32xf32>
}

// -----

// A table per channel of another dim than the last stays after the reshape.
// CHECK-LABEL: func.func @table_other_axis
// CHECK:         npu_graph.reshape
// CHECK-NEXT:    npu_graph.table %{{.*}}, %lut {axis = 1 : i64} : (tensor<1x16x32xi8>, tensor<16x256xi8>)
func.func @table_other_axis(%x: tensor<16x32xi8>, %lut: tensor<16x256xi8>) -> tensor<1x16x32xi8> {
  %r = npu_graph.reshape %x : (tensor<16x32xi8>) -> tensor<1x16x32xi8>
  %t = npu_graph.table %r, %lut {axis = 1 : i64} : (tensor<1x16x32xi8>, tensor<16x256xi8>) -> tensor<1x16x32xi8>
  func.return %t : tensor<1x16x32xi8>
}
