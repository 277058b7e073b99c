// RUN: %opt %s --split-input-file -p npu-merge-projections -o %t.mlir && filecheck %s < %t.mlir

// merge.mlir's BERT attention in f16: the merged weights and bias are f16 constants
// and the merged product, its bias add, view and column slices are f16 tensors.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: tensor<1x8x16xf16>) -> tensor<1x8x16xf16> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %x2 = npu_graph.reshape %x : (tensor<1x8x16xf16>) -> tensor<8x16xf16>
    %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf16>} : tensor<16x16xf16>
    %bq = npu_graph.constant {value = dense<0.1> : tensor<16xf16>} : tensor<16xf16>
    %wk = npu_graph.constant {value = dense<-0.03> : tensor<16x16xf16>} : tensor<16x16xf16>
    %bk = npu_graph.constant {value = dense<0.2> : tensor<16xf16>} : tensor<16xf16>
    %wv = npu_graph.constant {value = dense<0.07> : tensor<16x16xf16>} : tensor<16x16xf16>
    %bv = npu_graph.constant {value = dense<-0.1> : tensor<16xf16>} : tensor<16xf16>
    %q0 = npu_graph.matmul %x2, %wq : (tensor<8x16xf16>, tensor<16x16xf16>) -> tensor<8x16xf16> loc("q")
    %q1 = npu_graph.add %q0, %bq : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16> loc("q_bias")
    %q2 = npu_graph.reshape %q1 : (tensor<8x16xf16>) -> tensor<1x8x2x8xf16>
    %q = npu_graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf16>) -> tensor<1x2x8x8xf16>
    %k0 = npu_graph.matmul %x2, %wk : (tensor<8x16xf16>, tensor<16x16xf16>) -> tensor<8x16xf16> loc("k")
    %k1 = npu_graph.add %k0, %bk : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16> loc("k_bias")
    %k2 = npu_graph.reshape %k1 : (tensor<8x16xf16>) -> tensor<1x8x2x8xf16>
    %kt = npu_graph.transpose %k2 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x8xf16>) -> tensor<1x2x8x8xf16>
    %v0 = npu_graph.matmul %x2, %wv : (tensor<8x16xf16>, tensor<16x16xf16>) -> tensor<8x16xf16> loc("v")
    %v1 = npu_graph.add %v0, %bv : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16> loc("v_bias")
    %v2 = npu_graph.reshape %v1 : (tensor<8x16xf16>) -> tensor<1x8x2x8xf16>
    %v = npu_graph.transpose %v2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf16>) -> tensor<1x2x8x8xf16>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x8xf16>, tensor<1x2x8x8xf16>) -> tensor<1x2x8x8xf16>
    %c = npu_graph.constant {value = dense<2.828427> : tensor<f16>} : tensor<f16>
    %d = npu_graph.div %s, %c : (tensor<1x2x8x8xf16>, tensor<f16>) -> tensor<1x2x8x8xf16>
    %p = npu_graph.softmax %d {axis = -1 : i64} : (tensor<1x2x8x8xf16>) -> tensor<1x2x8x8xf16>
    %o = npu_graph.matmul %p, %v : (tensor<1x2x8x8xf16>, tensor<1x2x8x8xf16>) -> tensor<1x2x8x8xf16> loc("attn")
    %o1 = npu_graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x8xf16>) -> tensor<1x8x2x8xf16>
    %y = npu_graph.reshape %o1 : (tensor<1x8x2x8xf16>) -> tensor<1x8x16xf16>
    func.return %y : tensor<1x8x16xf16>
  }
}

// CHECK-LABEL: func.func @main
// CHECK:         %[[W:.*]] = npu_graph.constant {weight = "q.merged"} : tensor<16x48xf16>
// CHECK-NEXT:    %[[M:.*]] = npu_graph.matmul %x2, %[[W]] : (tensor<8x16xf16>, tensor<16x48xf16>) -> tensor<8x48xf16>
// CHECK-NEXT:    %[[C:.*]] = npu_graph.constant {weight = "q.merged_bias"} : tensor<48xf16>
// CHECK-NEXT:    %[[A:.*]] = npu_graph.add %[[M]], %[[C]] : (tensor<8x48xf16>, tensor<48xf16>) -> tensor<8x48xf16>
// CHECK-NEXT:    %[[R:.*]] = npu_graph.reshape %[[A]] : (tensor<8x48xf16>) -> tensor<1x8x48xf16>
// CHECK-NEXT:    npu_graph.slice %[[R]] {starts = array<i64: 0, 0, 0>, ends = array<i64: 1, 8, 16>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x48xf16>) -> tensor<1x8x16xf16>

// -----

// An integer product read as i32 heads (not requantized) is not merged.
builtin.module {
  func.func @main(%x: tensor<8x16xi8>) -> (tensor<1x2x8x8xi32>, tensor<1x2x8x8xi32>) attributes {npu.inputs = ["x"], npu.outputs = ["q", "k"]} {
    %wq = npu_graph.constant {value = dense<3> : tensor<16x16xi8>} : tensor<16x16xi8>
    %wk = npu_graph.constant {value = dense<-2> : tensor<16x16xi8>} : tensor<16x16xi8>
    %q0 = npu_graph.matmul %x, %wq {input_zero_point = 4 : i64} : (tensor<8x16xi8>, tensor<16x16xi8>) -> tensor<8x16xi32> loc("q")
    %q2 = npu_graph.reshape %q0 : (tensor<8x16xi32>) -> tensor<1x8x2x8xi32>
    %q = npu_graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xi32>) -> tensor<1x2x8x8xi32>
    %k0 = npu_graph.matmul %x, %wk {input_zero_point = 4 : i64} : (tensor<8x16xi8>, tensor<16x16xi8>) -> tensor<8x16xi32> loc("k")
    %k2 = npu_graph.reshape %k0 : (tensor<8x16xi32>) -> tensor<1x8x2x8xi32>
    %k = npu_graph.transpose %k2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xi32>) -> tensor<1x2x8x8xi32>
    func.return %q, %k : tensor<1x2x8x8xi32>, tensor<1x2x8x8xi32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:     merged
// CHECK:         npu_graph.matmul %x, %wq {input_zero_point = 4 : i64}
// CHECK:         npu_graph.matmul %x, %wk {input_zero_point = 4 : i64}

// -----

// A QDQ model's integer projections (npu-fuse-qdq: i8 @ i8 -> i32, an i32 bias, a
// requantize per column) merge: the weights and biases side by side, the zero points
// kept, the multipliers and output zero points as per-column constants (a scalar
// one repeated), one requantize with their common range and mode.
builtin.module {
  func.func @main(%x: tensor<8x16xi8>) -> (tensor<1x2x8x8xi8>, tensor<1x2x8x8xi8>) attributes {npu.inputs = ["x"], npu.outputs = ["q", "k"]} {
    %wq = npu_graph.constant {value = dense<3> : tensor<16x16xi8>} : tensor<16x16xi8>
    %wk = npu_graph.constant {value = dense<-2> : tensor<16x16xi8>} : tensor<16x16xi8>
    %bq = npu_graph.constant {value = dense<100> : tensor<16xi32>} : tensor<16xi32>
    %bk = npu_graph.constant {value = dense<-7> : tensor<16xi32>} : tensor<16xi32>
    %mq = npu_graph.constant {value = dense<0.25> : tensor<16xf32>} : tensor<16xf32>
    %mk = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %zq = npu_graph.constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
    %zk = npu_graph.constant {value = dense<-1.0> : tensor<f32>} : tensor<f32>
    %q0 = npu_graph.matmul %x, %wq {input_zero_point = 4 : i64} : (tensor<8x16xi8>, tensor<16x16xi8>) -> tensor<8x16xi32> loc("q")
    %q1 = npu_graph.add %q0, %bq : (tensor<8x16xi32>, tensor<16xi32>) -> tensor<8x16xi32>
    %qr = npu_graph.requantize %q1, %mq, %zq : (tensor<8x16xi32>, tensor<16xf32>, tensor<f32>) -> tensor<8x16xi8>
    %q2 = npu_graph.reshape %qr : (tensor<8x16xi8>) -> tensor<1x8x2x8xi8>
    %q = npu_graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xi8>) -> tensor<1x2x8x8xi8>
    %k0 = npu_graph.matmul %x, %wk {input_zero_point = 4 : i64} : (tensor<8x16xi8>, tensor<16x16xi8>) -> tensor<8x16xi32> loc("k")
    %k1 = npu_graph.add %k0, %bk : (tensor<8x16xi32>, tensor<16xi32>) -> tensor<8x16xi32>
    %kr = npu_graph.requantize %k1, %mk, %zk : (tensor<8x16xi32>, tensor<f32>, tensor<f32>) -> tensor<8x16xi8>
    %k2 = npu_graph.reshape %kr : (tensor<8x16xi8>) -> tensor<1x8x2x8xi8>
    %k = npu_graph.transpose %k2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xi8>) -> tensor<1x2x8x8xi8>
    func.return %q, %k : tensor<1x2x8x8xi8>, tensor<1x2x8x8xi8>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:         %[[W:.*]] = npu_graph.constant {weight = "q.merged"} : tensor<16x32xi8>
// CHECK-NEXT:    %[[M:.*]] = npu_graph.matmul %x, %[[W]] {input_zero_point = 4 : i64} : (tensor<8x16xi8>, tensor<16x32xi8>) -> tensor<8x32xi32>
// CHECK-NEXT:    %[[C:.*]] = npu_graph.constant {weight = "q.merged_bias"} : tensor<32xi32>
// CHECK-NEXT:    %[[A:.*]] = npu_graph.add %[[M]], %[[C]] : (tensor<8x32xi32>, tensor<32xi32>) -> tensor<8x32xi32>
// CHECK-NEXT:    %[[MU:.*]] = npu_graph.constant {weight = "q.merged_requant"} : tensor<32xf32>
// CHECK-NEXT:    %[[Z:.*]] = npu_graph.constant {weight = "q.merged_zp"} : tensor<32xf32>
// CHECK-NEXT:    %[[RQ:.*]] = npu_graph.requantize %[[A]], %[[MU]], %[[Z]] : (tensor<8x32xi32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xi8>
// CHECK-NEXT:    %[[R:.*]] = npu_graph.reshape %[[RQ]] : (tensor<8x32xi8>) -> tensor<1x8x32xi8>
// CHECK-NOT:     npu_graph.requantize

// -----

// Not merged: the requantizes saturate at other bounds (a fused Relu narrowed one).
builtin.module {
  func.func @main(%x: tensor<8x16xi8>) -> (tensor<1x2x8x8xi8>, tensor<1x2x8x8xi8>) attributes {npu.inputs = ["x"], npu.outputs = ["q", "k"]} {
    %wq = npu_graph.constant {value = dense<3> : tensor<16x16xi8>} : tensor<16x16xi8>
    %wk = npu_graph.constant {value = dense<-2> : tensor<16x16xi8>} : tensor<16x16xi8>
    %m = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xi8>, tensor<16x16xi8>) -> tensor<8x16xi32> loc("q")
    %qr = npu_graph.requantize %q0, %m, %z {min = 0 : i64} : (tensor<8x16xi32>, tensor<f32>, tensor<f32>) -> tensor<8x16xi8>
    %q2 = npu_graph.reshape %qr : (tensor<8x16xi8>) -> tensor<1x8x2x8xi8>
    %q = npu_graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xi8>) -> tensor<1x2x8x8xi8>
    %k0 = npu_graph.matmul %x, %wk : (tensor<8x16xi8>, tensor<16x16xi8>) -> tensor<8x16xi32> loc("k")
    %kr = npu_graph.requantize %k0, %m, %z : (tensor<8x16xi32>, tensor<f32>, tensor<f32>) -> tensor<8x16xi8>
    %k2 = npu_graph.reshape %kr : (tensor<8x16xi8>) -> tensor<1x8x2x8xi8>
    %k = npu_graph.transpose %k2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xi8>) -> tensor<1x2x8x8xi8>
    func.return %q, %k : tensor<1x2x8x8xi8>, tensor<1x2x8x8xi8>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:     merged
// CHECK:         npu_graph.requantize %q0
// CHECK:         npu_graph.requantize %k0
