// RUN: %opt %s -p npu-merge-projections -o %t.mlir && filecheck %s < %t.mlir
// RUN: %opt %s -p npu-merge-projections,npu-fuse -o %t2.mlir && filecheck %s --check-prefix=FUSED < %t2.mlir
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// BERT's attention, canonicalized: q, k and v are three projections of one input,
// each split into heads and transposed heads-first. They become one matmul by the
// weights side by side (and one bias add), seen as [B, S, 3 x 16], whose column slices
// the heads read; npu-fuse then reads q, k and v as head windows of that one
// projection (`head_window`: heads 0, 2 and 4 of its 6), so no slice is copied.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %x2 = npu_graph.reshape %x : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
    %wq = npu_graph.constant {value = dense<0.05> : tensor<16x16xf32>} : tensor<16x16xf32>
    %bq = npu_graph.constant {value = dense<0.1> : tensor<16xf32>} : tensor<16xf32>
    %wk = npu_graph.constant {value = dense<-0.03> : tensor<16x16xf32>} : tensor<16x16xf32>
    %bk = npu_graph.constant {value = dense<0.2> : tensor<16xf32>} : tensor<16xf32>
    %wv = npu_graph.constant {value = dense<0.07> : tensor<16x16xf32>} : tensor<16x16xf32>
    %bv = npu_graph.constant {value = dense<-0.1> : tensor<16xf32>} : tensor<16xf32>
    %q0 = npu_graph.matmul %x2, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32> loc("q")
    %q1 = npu_graph.add %q0, %bq : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32> loc("q_bias")
    %q2 = npu_graph.reshape %q1 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %q = npu_graph.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %k0 = npu_graph.matmul %x2, %wk : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32> loc("k")
    %k1 = npu_graph.add %k0, %bk : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32> loc("k_bias")
    %k2 = npu_graph.reshape %k1 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %kt = npu_graph.transpose %k2 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %v0 = npu_graph.matmul %x2, %wv : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32> loc("v")
    %v1 = npu_graph.add %v0, %bv : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32> loc("v_bias")
    %v2 = npu_graph.reshape %v1 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %v = npu_graph.transpose %v2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %c = npu_graph.constant {value = dense<2.828427> : tensor<f32>} : tensor<f32>
    %d = npu_graph.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    %p = npu_graph.softmax %d {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %o = npu_graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> loc("attn")
    %o1 = npu_graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x8xf32>) -> tensor<1x8x2x8xf32>
    %y = npu_graph.reshape %o1 : (tensor<1x8x2x8xf32>) -> tensor<1x8x16xf32>
    func.return %y : tensor<1x8x16xf32>
  }
}
// CHECK:      %[[X2:.*]] = npu_graph.reshape %x : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT: %[[W:.*]] = npu_graph.constant {weight = "q.merged"} : tensor<16x48xf32>
// CHECK-NEXT: %[[M:.*]] = npu_graph.matmul %[[X2]], %[[W]] : (tensor<8x16xf32>, tensor<16x48xf32>) -> tensor<8x48xf32>
// CHECK-NEXT: %[[B:.*]] = npu_graph.constant {weight = "q.merged_bias"} : tensor<48xf32>
// CHECK-NEXT: %[[A:.*]] = npu_graph.add %[[M]], %[[B]] : (tensor<8x48xf32>, tensor<48xf32>) -> tensor<8x48xf32>
// CHECK-NEXT: %[[Y:.*]] = npu_graph.reshape %[[A]] : (tensor<8x48xf32>) -> tensor<1x8x48xf32>
// CHECK-NEXT: %[[SQ:.*]] = npu_graph.slice %[[Y]] {starts = array<i64: 0, 0, 0>, ends = array<i64: 1, 8, 16>, steps = array<i64: 1, 1, 1>}
// CHECK-NEXT: %[[SK:.*]] = npu_graph.slice %[[Y]] {starts = array<i64: 0, 0, 16>, ends = array<i64: 1, 8, 32>, steps = array<i64: 1, 1, 1>}
// CHECK-NEXT: %[[SV:.*]] = npu_graph.slice %[[Y]] {starts = array<i64: 0, 0, 32>, ends = array<i64: 1, 8, 48>, steps = array<i64: 1, 1, 1>}
// CHECK-NEXT: %{{.*}} = npu_graph.reshape %[[SQ]] : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
// CHECK-NEXT: %q = npu_graph.transpose
// CHECK-NEXT: %{{.*}} = npu_graph.reshape %[[SK]] : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
// CHECK-NEXT: %kt = npu_graph.transpose
// CHECK-NEXT: %{{.*}} = npu_graph.reshape %[[SV]] : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
// CHECK-NEXT: %v = npu_graph.transpose
// CHECK-NOT:  npu_graph.constant {value = dense<0.05{{.*}}> : tensor<16x16xf32>}

// FUSED:      %[[Y:.*]] = npu_graph.reshape %{{.*}} : (tensor<8x48xf32>) -> tensor<1x8x48xf32>
// FUSED:      %[[V:.*]] = npu_graph.reshape %[[Y]] : (tensor<1x8x48xf32>) -> tensor<1x8x6x8xf32>
// FUSED:      npu_graph.attention %[[V]], %[[V]], %[[V]] {scale = {{.*}}, key_rows, bshd = array<i64: 0, 1, 2, 3>, head_window = array<i64: 0, 2, 4, 2>}
// FUSED-NOT:  npu_graph.slice

// SIM: check:       ok vs numpy float64 reference
