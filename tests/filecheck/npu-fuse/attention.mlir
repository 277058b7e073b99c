// RUN: %opt %s --split-input-file -p npu-fuse,npu-dce | filecheck %s
// RUN: %opt %s --split-input-file -p 'npu-fuse{disable=attention}' | filecheck %s --check-prefix=OFF

// The `attention` rule: q @ kt, scaled, plus an additive mask, softmax over the last
// axis, @ v -> one npu_graph.attention (BERT's form: a divide by sqrt(d), a [B, 1, 1, T]
// mask). Switched off, the chain stays as it was.
// CHECK-LABEL: func.func @bert
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %kt, %v, %mask {scale = 1.250000e-01 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %[[A]]
// OFF-LABEL:   func.func @bert
// OFF:           npu_graph.softmax
// OFF-NOT:       npu_graph.attention
func.func @bert(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %c = npu_graph.constant {value = dense<8.0> : tensor<f32>} : tensor<f32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %d = npu_graph.div %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = npu_graph.add %d, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = npu_graph.softmax %m {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// -----

// ViT's form: a multiply by the scale, no mask.
// CHECK-LABEL: func.func @vit
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %kt, %v {scale = 5.000000e-01 : f32}
// CHECK-NEXT:    func.return %[[A]]
func.func @vit(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %c = npu_graph.constant {value = dense<0.5> : tensor<1xf32>} : tensor<1xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %d = npu_graph.mul %c, %s : (tensor<1xf32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %p = npu_graph.softmax %d {axis = 2 : i64} : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %o = npu_graph.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  func.return %o : tensor<2x4x8xf32>
}

// -----

// GPT-2's causal form: where(causal, scores, float32 min) is scores plus the
// additive mask where(causal, 0, min) (exact: s + min rounds to min), and that mask
// is 0 where key j <= query i: the attention takes the rows' limits [0, 1] and the
// keys' positions [0, 1] instead of the 2x2 values (`causal` = the fill).
// CHECK-LABEL: func.func @causal
// CHECK-NEXT:    %[[R:.*]] = npu_graph.constant {value = dense<{{\[\[\[\[}}0.000000e+00], [1.000000e+00]]]]> : tensor<1x1x2x1xf32>}
// CHECK-NEXT:    %[[K:.*]] = npu_graph.constant {value = dense<{{\[\[\[\[}}0.000000e+00, 1.000000e+00]]]]> : tensor<1x1x1x2xf32>}
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %kt, %v, %[[R]], %[[K]] {scale = 1.000000e+00 : f32, causal = -3.40282347e+38 : f32}
// CHECK-NEXT:    func.return %[[A]]
func.func @causal(%q: tensor<1x3x2x4xf32>, %kt: tensor<1x3x4x2xf32>, %v: tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32> {
  %tril = npu_graph.constant {value = dense<[[[[1.0, 0.0], [1.0, 1.0]]]]> : tensor<1x1x2x2xf32>} : tensor<1x1x2x2xf32>
  %min = npu_graph.constant {value = dense<-3.40282347e+38> : tensor<f32>} : tensor<f32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x3x2x4xf32>, tensor<1x3x4x2xf32>) -> tensor<1x3x2x2xf32>
  %w = npu_graph.where %tril, %s, %min : (tensor<1x1x2x2xf32>, tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %p = npu_graph.softmax %w {axis = 3 : i64} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x3x2x2xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  func.return %o : tensor<1x3x2x4xf32>
}

// -----

// An additive causal mask constant with one past key (0 where j <= i + 1, -1e35
// elsewhere): the rows' limits start at 1.
// CHECK-LABEL: func.func @causal_past
// CHECK-NEXT:    %[[R:.*]] = npu_graph.constant {value = dense<{{\[\[}}1.000000e+00], [2.000000e+00]]> : tensor<2x1xf32>}
// CHECK-NEXT:    %[[K:.*]] = npu_graph.constant {value = dense<{{\[\[}}0.000000e+00, 1.000000e+00, 2.000000e+00]]> : tensor<1x3xf32>}
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %kt, %v, %[[R]], %[[K]] {scale = 1.000000e+00 : f32, causal = -1.000000e+35 : f32}
func.func @causal_past(%q: tensor<2x2x4xf32>, %kt: tensor<2x4x3xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x2x4xf32> {
  %m = npu_graph.constant {value = dense<[[0.0, 0.0, -1.0e+35], [0.0, 0.0, 0.0]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<2x2x4xf32>, tensor<2x4x3xf32>) -> tensor<2x2x3xf32>
  %a = npu_graph.add %s, %m : (tensor<2x2x3xf32>, tensor<2x3xf32>) -> tensor<2x2x3xf32>
  %p = npu_graph.softmax %a {axis = 2 : i64} : (tensor<2x2x3xf32>) -> tensor<2x2x3xf32>
  %o = npu_graph.matmul %p, %v : (tensor<2x2x3xf32>, tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
  func.return %o : tensor<2x2x4xf32>
}

// -----

// Not causal (the visible keys of row 1 skip key 0): the where stays a dense
// additive mask, a new constant.
// CHECK-LABEL: func.func @not_causal
// CHECK-NEXT:    %[[M:.*]] = npu_graph.constant {value = dense<{{\[\[\[\[}}0.000000e+00, -3.40282347e+38], [-3.40282347e+38, 0.000000e+00]]]]> : tensor<1x1x2x2xf32>}
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %kt, %v, %[[M]] {scale = 1.000000e+00 : f32}
// CHECK-NEXT:    func.return %[[A]]
func.func @not_causal(%q: tensor<1x3x2x4xf32>, %kt: tensor<1x3x4x2xf32>, %v: tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32> {
  %diag = npu_graph.constant {value = dense<[[[[1.0, 0.0], [0.0, 1.0]]]]> : tensor<1x1x2x2xf32>} : tensor<1x1x2x2xf32>
  %min = npu_graph.constant {value = dense<-3.40282347e+38> : tensor<f32>} : tensor<f32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x3x2x4xf32>, tensor<1x3x4x2xf32>) -> tensor<1x3x2x2xf32>
  %w = npu_graph.where %diag, %s, %min : (tensor<1x1x2x2xf32>, tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %p = npu_graph.softmax %w {axis = 3 : i64} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x3x2x2xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  func.return %o : tensor<1x3x2x4xf32>
}

// Must not fire: a where with a modest fill (-10000) is no additive mask (s - 10000
// is not -10000) ...
// CHECK-LABEL: func.func @modest_fill
// CHECK-NOT:     npu_graph.attention
// CHECK:         npu_graph.where
func.func @modest_fill(%q: tensor<1x3x2x4xf32>, %kt: tensor<1x3x4x2xf32>, %v: tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32> {
  %tril = npu_graph.constant {value = dense<[[[[1.0, 0.0], [1.0, 1.0]]]]> : tensor<1x1x2x2xf32>} : tensor<1x1x2x2xf32>
  %fill = npu_graph.constant {value = dense<-10000.0> : tensor<f32>} : tensor<f32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x3x2x4xf32>, tensor<1x3x4x2xf32>) -> tensor<1x3x2x2xf32>
  %w = npu_graph.where %tril, %s, %fill : (tensor<1x1x2x2xf32>, tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %p = npu_graph.softmax %w {axis = 3 : i64} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x3x2x2xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  func.return %o : tensor<1x3x2x4xf32>
}

// -----

// ... a softmax over another axis ...
// CHECK-LABEL: func.func @other_axis
// CHECK-NOT:     npu_graph.attention
func.func @other_axis(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %s = npu_graph.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = npu_graph.softmax %s {axis = 1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = npu_graph.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o : tensor<2x4x8xf32>
}

// -----

// ... scores read by another op too (they must reach DRAM anyway) ...
// CHECK-LABEL: func.func @scores_returned
// CHECK-NOT:     npu_graph.attention
func.func @scores_returned(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %s = npu_graph.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = npu_graph.softmax %s {axis = 2 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = npu_graph.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o, %p : tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// -----

// Rows too long for a core's SRAM whole fuse all the same: 4096 keys need kt and v
// of 64 x 4096 floats (2 MiB), past the 512 KiB of the default arch, but a query
// row with a block of 16 keys fits, and npu-tile splits the keys into blocks
// merged by an online softmax.
// CHECK-LABEL: func.func @long_rows
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %kt, %v {scale = 1.000000e+00 : f32} : (tensor<1x4x64xf32>, tensor<1x64x4096xf32>, tensor<1x4096x64xf32>) -> tensor<1x4x64xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @long_rows(%q: tensor<1x4x64xf32>, %kt: tensor<1x64x4096xf32>, %v: tensor<1x4096x64xf32>) -> tensor<1x4x64xf32> {
  %s = npu_graph.matmul %q, %kt : (tensor<1x4x64xf32>, tensor<1x64x4096xf32>) -> tensor<1x4x4096xf32>
  %p = npu_graph.softmax %s {axis = 2 : i64} : (tensor<1x4x4096xf32>) -> tensor<1x4x4096xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x4x4096xf32>, tensor<1x4096x64xf32>) -> tensor<1x4x64xf32>
  func.return %o : tensor<1x4x64xf32>
}

// -----

// ... but not when the keys cannot be split: 4099 (a prime) has no block of a
// multiple of the cube's 16 (a padded key would enter the softmax), and one row
// whole needs kt and v of 64 x 4099 floats, past the 512 KiB of SRAM.
// CHECK-LABEL: func.func @too_long
// CHECK-NOT:     npu_graph.attention
func.func @too_long(%q: tensor<1x4x64xf32>, %kt: tensor<1x64x4099xf32>, %v: tensor<1x4099x64xf32>) -> tensor<1x4x64xf32> {
  %s = npu_graph.matmul %q, %kt : (tensor<1x4x64xf32>, tensor<1x64x4099xf32>) -> tensor<1x4x4099xf32>
  %p = npu_graph.softmax %s {axis = 2 : i64} : (tensor<1x4x4099xf32>) -> tensor<1x4x4099xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x4x4099xf32>, tensor<1x4099x64xf32>) -> tensor<1x4x64xf32>
  func.return %o : tensor<1x4x64xf32>
}

// -----

// GPT-2 decode's form: kt is the cached keys k [B, H, T, D] with the last two dims
// swapped. The attention reads k's rows (`key_rows`; the cube takes it transposed)
// and the transposed copy - a pass over the whole cache - goes.
// CHECK-LABEL: func.func @decode
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %k, %v {scale = 1.000000e+00 : f32, key_rows} : (tensor<2x3x1x8xf32>, tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x1x8xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @decode(%q: tensor<2x3x1x8xf32>, %k: tensor<2x3x16x8xf32>, %v: tensor<2x3x16x8xf32>) -> tensor<2x3x1x8xf32> {
  %kt = npu_graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x16x8xf32>) -> tensor<2x3x8x16xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<2x3x1x8xf32>, tensor<2x3x8x16xf32>) -> tensor<2x3x1x16xf32>
  %p = npu_graph.softmax %s {axis = 3 : i64} : (tensor<2x3x1x16xf32>) -> tensor<2x3x1x16xf32>
  %o = npu_graph.matmul %p, %v : (tensor<2x3x1x16xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x1x8xf32>
  func.return %o : tensor<2x3x1x8xf32>
}

// -----

// ... but a transposed copy something else reads stays, and the attention takes it
// (as it does any other permutation: here the heads move too).
// CHECK-LABEL: func.func @kt_also_returned
// CHECK:         %[[KT:.*]] = npu_graph.transpose %k
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %[[KT]], %v {scale = 1.000000e+00 : f32} :
// CHECK-LABEL: func.func @other_perm
// CHECK:         %[[KT:.*]] = npu_graph.transpose %k {perm = array<i64: 1, 0, 3, 2>}
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %[[KT]], %v {scale = 1.000000e+00 : f32} :
func.func @kt_also_returned(%q: tensor<2x3x1x8xf32>, %k: tensor<2x3x16x8xf32>, %v: tensor<2x3x16x8xf32>) -> (tensor<2x3x1x8xf32>, tensor<2x3x8x16xf32>) {
  %kt = npu_graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x16x8xf32>) -> tensor<2x3x8x16xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<2x3x1x8xf32>, tensor<2x3x8x16xf32>) -> tensor<2x3x1x16xf32>
  %p = npu_graph.softmax %s {axis = 3 : i64} : (tensor<2x3x1x16xf32>) -> tensor<2x3x1x16xf32>
  %o = npu_graph.matmul %p, %v : (tensor<2x3x1x16xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x1x8xf32>
  func.return %o, %kt : tensor<2x3x1x8xf32>, tensor<2x3x8x16xf32>
}
func.func @other_perm(%q: tensor<3x2x1x8xf32>, %k: tensor<2x3x16x8xf32>, %v: tensor<3x2x16x8xf32>) -> tensor<3x2x1x8xf32> {
  %kt = npu_graph.transpose %k {perm = array<i64: 1, 0, 3, 2>} : (tensor<2x3x16x8xf32>) -> tensor<3x2x8x16xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<3x2x1x8xf32>, tensor<3x2x8x16xf32>) -> tensor<3x2x1x16xf32>
  %p = npu_graph.softmax %s {axis = 3 : i64} : (tensor<3x2x1x16xf32>) -> tensor<3x2x1x16xf32>
  %o = npu_graph.matmul %p, %v : (tensor<3x2x1x16xf32>, tensor<3x2x16x8xf32>) -> tensor<3x2x1x8xf32>
  func.return %o : tensor<3x2x1x8xf32>
}
