// RUN: %opt %s -p npu-fuse-qdq --weights-file %t.weights.npz | filecheck %s
// RUN: %opt %s -p npu-fuse-qdq --weights-file %t.weights.npz --remarks=- 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// Elementwise chains between an 8-bit input and a quantize become 256-entry lookup tables
// (entry j: the chain's result for the input whose 8 bits are j: 0..127, then -128..-1 for i8).
builtin.module {
  // A sigmoid, quantize/dequantize pair, then x2: one table of 256 entries.
  func.func @per_tensor(%x: tensor<64x64xi8>) -> tensor<64x64xui8> {
    %s = npu_graph.constant {value = dense<0.0625> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %so = npu_graph.constant {value = dense<0.0078125> : tensor<f32>} : tensor<f32>
    %two = npu_graph.constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
    %d = npu_graph.dequantize %x, %s, %z : (tensor<64x64xi8>, tensor<f32>, tensor<f32>) -> tensor<64x64xf32>
    %e = npu_graph.sigmoid %d : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %q1 = npu_graph.quantize %e, %so, %z : (tensor<64x64xf32>, tensor<f32>, tensor<f32>) -> tensor<64x64xui8>
    %d1 = npu_graph.dequantize %q1, %so, %z : (tensor<64x64xui8>, tensor<f32>, tensor<f32>) -> tensor<64x64xf32>
    %m = npu_graph.mul %d1, %two : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32>
    %q = npu_graph.quantize %m, %so, %z : (tensor<64x64xf32>, tensor<f32>, tensor<f32>) -> tensor<64x64xui8>
    func.return %q : tensor<64x64xui8>
  }
  // CHECK-LABEL: func.func @per_tensor
  // (the table is a new weight: tests/test_qdq_tables.py checks its values end to end)
  // CHECK:      %[[T:.*]] = npu_graph.constant {weight = "const.table{{.*}}"} : tensor<256xui8>
  // CHECK-NEXT: %q = npu_graph.table %x, %[[T]] : (tensor<64x64xi8>, tensor<256xui8>) -> tensor<64x64xui8>
  // CHECK-NEXT: func.return %q

  // A per-channel multiply (constants along dim 1): a table of a row per channel.
  func.func @per_channel(%x: tensor<1x2x32x32xui8>) -> tensor<1x2x32x32xui8> {
    %s = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %k = npu_graph.constant {value = dense<[[[0.5]], [[2.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %d = npu_graph.dequantize %x, %s, %z : (tensor<1x2x32x32xui8>, tensor<f32>, tensor<f32>) -> tensor<1x2x32x32xf32>
    %m = npu_graph.mul %d, %k : (tensor<1x2x32x32xf32>, tensor<2x1x1xf32>) -> tensor<1x2x32x32xf32>
    %q = npu_graph.quantize %m, %s, %z : (tensor<1x2x32x32xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x32x32xui8>
    func.return %q : tensor<1x2x32x32xui8>
  }
  // CHECK-LABEL: func.func @per_channel
  // CHECK:      %[[T:.*]] = npu_graph.constant {weight = "const.table{{.*}}"} : tensor<2x256xui8>
  // CHECK-NEXT: %q = npu_graph.table %x, %[[T]] {axis = 1 : i64} : (tensor<1x2x32x32xui8>, tensor<2x256xui8>) -> tensor<1x2x32x32xui8>

  // Not tables: constants varying along two dims; a chain value read after it too; a
  // tensor so small that loading its per-channel table costs more than the ops.
  func.func @kept(%x: tensor<1x4x8x8xi8>, %y: tensor<1x1024xi8>) -> (tensor<1x4x8x8xi8>, tensor<1x4x8x8xi8>, tensor<1x4x8x8xf32>, tensor<1x1024xi8>) {
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %hw = npu_graph.constant {value = dense<1.5> : tensor<4x8x1xf32>} : tensor<4x8x1xf32>
    %ch = npu_graph.constant {value = dense<1.5> : tensor<1x1024xf32>} : tensor<1x1024xf32>
    %d = npu_graph.dequantize %x, %s, %z : (tensor<1x4x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xf32>
    %two = npu_graph.mul %d, %hw : (tensor<1x4x8x8xf32>, tensor<4x8x1xf32>) -> tensor<1x4x8x8xf32>
    %q2 = npu_graph.quantize %two, %s, %z : (tensor<1x4x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xi8>
    %e = npu_graph.exp %d : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %qe = npu_graph.quantize %e, %s, %z : (tensor<1x4x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x8x8xi8>
    %dy = npu_graph.dequantize %y, %s, %z : (tensor<1x1024xi8>, tensor<f32>, tensor<f32>) -> tensor<1x1024xf32>
    %my = npu_graph.mul %dy, %ch : (tensor<1x1024xf32>, tensor<1x1024xf32>) -> tensor<1x1024xf32>
    %qy = npu_graph.quantize %my, %s, %z : (tensor<1x1024xf32>, tensor<f32>, tensor<f32>) -> tensor<1x1024xi8>
    func.return %q2, %qe, %e, %qy : tensor<1x4x8x8xi8>, tensor<1x4x8x8xi8>, tensor<1x4x8x8xf32>, tensor<1x1024xi8>
  }
  // CHECK-LABEL: func.func @kept
  // CHECK-NOT:  npu_graph.table
  // CHECK:      %two = npu_graph.mul %d, %hw
  // CHECK:      %e = npu_graph.exp %d
  // CHECK:      %my = npu_graph.mul %dy, %ch
  // CHECK-NOT:  npu_graph.table

  // A concat moving integers: its operands are quantized with its parameters; an
  // operand dequantized with other parameters (%a) is rescaled by a table of the pair,
  // one of the concat's own parameters (%b) is itself.
  func.func @rescale(%a: tensor<1x32x16x16xi8>, %b: tensor<1x32x16x16xi8>) -> tensor<1x64x16x16xi8> {
    %sa = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %da = npu_graph.dequantize %a, %sa, %z : (tensor<1x32x16x16xi8>, tensor<f32>, tensor<f32>) -> tensor<1x32x16x16xf32>
    %db = npu_graph.dequantize %b, %s, %z : (tensor<1x32x16x16xi8>, tensor<f32>, tensor<f32>) -> tensor<1x32x16x16xf32>
    %c = npu_graph.concat %da, %db {axis = 1 : i64} : (tensor<1x32x16x16xf32>, tensor<1x32x16x16xf32>) -> tensor<1x64x16x16xf32>
    %q = npu_graph.quantize %c, %s, %z : (tensor<1x64x16x16xf32>, tensor<f32>, tensor<f32>) -> tensor<1x64x16x16xi8>
    func.return %q : tensor<1x64x16x16xi8>
  }
  // CHECK-LABEL: func.func @rescale
  // CHECK:      %[[T:.*]] = npu_graph.constant {weight = "const.table{{.*}}"} : tensor<256xi8>
  // CHECK-NEXT: %[[R:.*]] = npu_graph.table %a, %[[T]] : (tensor<1x32x16x16xi8>, tensor<256xi8>) -> tensor<1x32x16x16xi8>
  // CHECK:      %q = npu_graph.concat %[[R]], %b {axis = 1 : i64}
}

// REMARK-DAG: remark: npu-fuse-qdq: applied: {{.*}}6 ops computed as a 256-entry lookup table of their i8 input
// REMARK-DAG: remark: npu-fuse-qdq: applied: {{.*}}3 ops computed as a 256-entry lookup table per index of dim 1 (2 x 256) of their ui8 input
// REMARK-DAG: remark: npu-fuse-qdq: applied: {{.*}}2 ops computed as a 256-entry lookup table of their i8 input
// REMARK-DAG: remark: npu-fuse-qdq: missed: {{.*}}not a lookup table: {{[0-9]+}} cycles against {{[0-9]+}} for the ops
