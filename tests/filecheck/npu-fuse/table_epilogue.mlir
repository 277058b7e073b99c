// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s

// A lookup table (npu-fuse-qdq's FoldTable) is elementwise on its input: it joins a
// product's epilogue after the requantize (a QDQ model's GELU after its FFN matmul)
// and an elementwise chain, which it may also start.
// CHECK-LABEL: func.func @matmul_table
// CHECK:         npu_graph.fused(%x, %w, %m, %z, %lut) {kernel = "npu_graph.matmul", rule = "matmul-epilogue"}
// CHECK:           npu_graph.matmul
// CHECK-NEXT:      npu_graph.requantize
// CHECK-NEXT:      npu_graph.table
// CHECK-NEXT:      npu_graph.yield
func.func @matmul_table(%x: tensor<8x16xi8>, %w: tensor<16x32xi8>, %m: tensor<f32>, %z: tensor<f32>, %lut: tensor<256xi8>) -> tensor<8x32xi8> {
  %acc = npu_graph.matmul %x, %w : (tensor<8x16xi8>, tensor<16x32xi8>) -> tensor<8x32xi32>
  %r = npu_graph.requantize %acc, %m, %z : (tensor<8x32xi32>, tensor<f32>, tensor<f32>) -> tensor<8x32xi8>
  %t = npu_graph.table %r, %lut : (tensor<8x32xi8>, tensor<256xi8>) -> tensor<8x32xi8>
  func.return %t : tensor<8x32xi8>
}

// -----

// CHECK-LABEL: func.func @table_first
// CHECK:         npu_graph.fused(%x, %lut, %s, %z) {kernel = "npu_graph.table", rule = "eltwise-chain"}
// CHECK:           npu_graph.table
// CHECK-NEXT:      npu_graph.dequantize
// CHECK-NEXT:      npu_graph.yield
func.func @table_first(%x: tensor<4x8xi8>, %lut: tensor<8x256xi8>, %s: tensor<f32>, %z: tensor<f32>) -> tensor<4x8xf32> {
  %t = npu_graph.table %x, %lut {axis = 1 : i64} : (tensor<4x8xi8>, tensor<8x256xi8>) -> tensor<4x8xi8>
  %d = npu_graph.dequantize %t, %s, %z : (tensor<4x8xi8>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %d : tensor<4x8xf32>
}

// -----

// Not joined: the table's input is read elsewhere too (written anyway); alone, the
// table is a kernel of its own (npu-tile's).
// CHECK-LABEL: func.func @read_twice
// CHECK:         npu_graph.fused
// CHECK:           npu_graph.requantize
// CHECK-NEXT:      npu_graph.yield
// CHECK:         %t = npu_graph.table %r, %lut
func.func @read_twice(%x: tensor<8x16xi8>, %w: tensor<16x32xi8>, %m: tensor<f32>, %z: tensor<f32>, %lut: tensor<256xi8>) -> (tensor<8x32xi8>, tensor<8x32xi8>) {
  %acc = npu_graph.matmul %x, %w : (tensor<8x16xi8>, tensor<16x32xi8>) -> tensor<8x32xi32>
  %r = npu_graph.requantize %acc, %m, %z : (tensor<8x32xi32>, tensor<f32>, tensor<f32>) -> tensor<8x32xi8>
  %t = npu_graph.table %r, %lut : (tensor<8x32xi8>, tensor<256xi8>) -> tensor<8x32xi8>
  func.return %t, %r : tensor<8x32xi8>, tensor<8x32xi8>
}
