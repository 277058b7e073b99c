// RUN: %opt %s --split-input-file -p npu-fuse,npu-dce | filecheck %s
// RUN: %opt %s --split-input-file -p npu-fuse,npu-dce,npu-tile,npu-tile-loops | filecheck %s --check-prefix=LOOP

// The projections leave q, k and v as [B, S, H, D] (BERT's reshape of [B, S, H*D]);
// exporters transpose them to [B, H, S, D] (k to [B, H, D, T]) for the products and
// the context back to [B, S, H, Dv]. The attention reads and writes them in place
// (`bshd`): the four transposes go, and each tile's DMA picks its heads' rows out of
// the [B, S, H, D] tensors (4 KiB of SRAM: a tile takes one head).
// CHECK-LABEL: func.func @bert
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %x, %y, %z, %mask {scale = 1.250000e-01 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>} : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x1x1x8xf32>) -> tensor<1x8x2x16xf32>
// CHECK-NEXT:    func.return %[[A]] : tensor<1x8x2x16xf32>
// LOOP-LABEL: func.func @bert
// LOOP:         npu_tile.loop {loops = ["d0", "d1", "d2", "d3", "t"], tile = array<i64: 1, 4, 2, 16, 8>, grid = array<i64: 1, 2, 1, 1, 1>
// LOOP-NEXT:    ^bb0(%d0: index, %d1: index, %d2: index, %d3: index, %t: index):
// LOOP-NEXT:      npu_tile.load %{{.*}}[%d0, 4 * %d1, 2 * %d2, 0] sizes [1, 4, 2, 16]
// LOOP-NEXT:      npu_tile.load %{{.*}}[%d0, 0, 2 * %d2, 0] sizes [1, 8, 2, 16]
// LOOP-NEXT:      npu_tile.load %{{.*}}[%d0, 0, 2 * %d2, 0] sizes [1, 8, 2, 16]
// LOOP-NEXT:      npu_tile.load %{{.*}}[%d0, 0, 0, 0] sizes [1, 1, 1, 8]
// LOOP-NEXT:      npu_graph.attention {{.*}} bshd = array<i64: 0, 1, 2, 3>} : (tensor<1x4x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x1x1x8xf32>) -> tensor<1x4x2x16xf32>
// LOOP:           npu_tile.store %{{.*}}[%d0, 4 * %d1, 2 * %d2, 16 * %d3] sizes [1, 4, 2, 16]
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 4096>} {
  func.func @bert(%x: tensor<1x8x2x16xf32>, %y: tensor<1x8x2x16xf32>, %z: tensor<1x8x2x16xf32>, %mask: tensor<1x1x1x8xf32>) -> tensor<1x8x2x16xf32> {
    %c = npu_graph.constant {value = dense<8.0> : tensor<f32>} : tensor<f32>
    %q = npu_graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
    %kt = npu_graph.transpose %y {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x16x8xf32>
    %v = npu_graph.transpose %z {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
    %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
    %d = npu_graph.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    %m = npu_graph.add %d, %mask : (tensor<1x2x8x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x2x8x8xf32>
    %p = npu_graph.softmax %m {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %o = npu_graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
    %r = npu_graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
    func.return %r : tensor<1x8x2x16xf32>
  }
}

// -----

// Some in place, some not: q comes heads first already (no transpose), k is a KV
// cache [B, H, T, D] read by rows (`key_rows` alone), v in place; the result is
// returned heads first (no transpose after it).
// CHECK-LABEL: func.func @mixed
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %q, %k, %z {scale = 1.000000e+00 : f32, key_rows, bshd = array<i64: 2>} : (tensor<1x2x1x16xf32>, tensor<1x2x8x16xf32>, tensor<1x8x2x16xf32>) -> tensor<1x2x1x16xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @mixed(%q: tensor<1x2x1x16xf32>, %k: tensor<1x2x8x16xf32>, %z: tensor<1x8x2x16xf32>) -> tensor<1x2x1x16xf32> {
  %kt = npu_graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x16xf32>) -> tensor<1x2x16x8xf32>
  %v = npu_graph.transpose %z {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x2x1x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x1x8xf32>
  %p = npu_graph.softmax %s {axis = -1 : i64} : (tensor<1x2x1x8xf32>) -> tensor<1x2x1x8xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x2x1x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x1x16xf32>
  func.return %o : tensor<1x2x1x16xf32>
}

// -----

// Must not read in place: q's transpose has another reader (it stays, and the
// attention reads its result); v's transpose is another permutation; the result's
// transpose is not the way back to [B, S, H, Dv] (it stays after the attention).
// CHECK-LABEL: func.func @kept
// CHECK:         %[[Q:.*]] = npu_graph.transpose %x {perm = array<i64: 0, 2, 1, 3>}
// CHECK:         %[[V:.*]] = npu_graph.transpose %z {perm = array<i64: 1, 2, 0, 3>}
// CHECK:         %[[A:.*]] = npu_graph.attention %[[Q]], %kt, %[[V]] {scale = 1.000000e+00 : f32} :
// CHECK-NEXT:    %[[R:.*]] = npu_graph.transpose %[[A]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT:    func.return %[[R]], %[[Q]]
func.func @kept(%x: tensor<1x8x2x16xf32>, %kt: tensor<1x2x16x8xf32>, %z: tensor<8x1x2x16xf32>) -> (tensor<1x2x16x8xf32>, tensor<1x2x8x16xf32>) {
  %q = npu_graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %v = npu_graph.transpose %z {perm = array<i64: 1, 2, 0, 3>} : (tensor<8x1x2x16xf32>) -> tensor<1x2x8x16xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  %p = npu_graph.softmax %s {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %r = npu_graph.transpose %o {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x16xf32>) -> tensor<1x2x16x8xf32>
  func.return %r, %q : tensor<1x2x16x8xf32>, tensor<1x2x8x16xf32>
}

// -----

// GPT-2's fused projection: q, k and v are column slices of one [B, S, 3 H D] tensor,
// reshaped to [B, S, H, D]. The attention reads all three out of one [B, S, 3 H, D]
// view of it (`head_window = [0, H, 2 H, H]`): the slices (copy kernels) go.
// CHECK-LABEL: func.func @c_attn
// CHECK-NEXT:    %[[V:.*]] = npu_graph.reshape %qkv : (tensor<1x8x96xf32>) -> tensor<1x8x6x16xf32>
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %[[V]], %[[V]], %[[V]] {scale = 1.000000e+00 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>, head_window = array<i64: 0, 2, 4, 2>} : (tensor<1x8x6x16xf32>, tensor<1x8x6x16xf32>, tensor<1x8x6x16xf32>) -> tensor<1x8x2x16xf32>
// CHECK-NEXT:    func.return %[[A]]
// LOOP-LABEL: func.func @c_attn
// LOOP:         npu_tile.load %[[X:.*]](%d0, %d1, %d2, %d3, %t)[%d0, 8 * %d1, 2 * %d2, 0] sizes [1, 8, 2, 16] pad 0.0 : tensor<1x8x6x16xf32>
// LOOP-NEXT:    npu_tile.load %[[X]](%d0, %d1, %d2, %d3, %t)[%d0, 0, 2 * %d2 + 2, 0] sizes [1, 8, 2, 16] pad 0.0 : tensor<1x8x6x16xf32>
// LOOP-NEXT:    npu_tile.load %[[X]](%d0, %d1, %d2, %d3, %t)[%d0, 0, 2 * %d2 + 4, 0] sizes [1, 8, 2, 16] pad 0.0 : tensor<1x8x6x16xf32>
// LOOP-NEXT:    npu_graph.attention %{{.*}} {scale = 1.000000e+00 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>}
func.func @c_attn(%qkv: tensor<1x8x96xf32>) -> tensor<1x8x2x16xf32> {
  %a = npu_graph.slice %qkv {starts = array<i64: 0, 0, 0>, ends = array<i64: 1, 8, 32>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x96xf32>) -> tensor<1x8x32xf32>
  %b = npu_graph.slice %qkv {starts = array<i64: 0, 0, 32>, ends = array<i64: 1, 8, 64>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x96xf32>) -> tensor<1x8x32xf32>
  %c = npu_graph.slice %qkv {starts = array<i64: 0, 0, 64>, ends = array<i64: 1, 8, 96>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x96xf32>) -> tensor<1x8x32xf32>
  %x = npu_graph.reshape %a : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %y = npu_graph.reshape %b : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %z = npu_graph.reshape %c : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %q = npu_graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %kt = npu_graph.transpose %y {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x16x8xf32>
  %v = npu_graph.transpose %z {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  %p = npu_graph.softmax %s {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %r = npu_graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
  func.return %r : tensor<1x8x2x16xf32>
}

// -----

// Must not read through the slices: v's slice starts inside a head (column 72 is not
// a multiple of D = 16), so none of the three is read in place (the slices stay).
// CHECK-LABEL: func.func @misaligned
// CHECK:         npu_graph.slice
// CHECK:         npu_graph.attention {{.*}}bshd = array<i64: 0, 1, 2, 3>} :
// CHECK-NOT:     head_window
func.func @misaligned(%qkv: tensor<1x8x104xf32>) -> tensor<1x8x2x16xf32> {
  %a = npu_graph.slice %qkv {starts = array<i64: 0, 0, 0>, ends = array<i64: 1, 8, 32>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x104xf32>) -> tensor<1x8x32xf32>
  %b = npu_graph.slice %qkv {starts = array<i64: 0, 0, 32>, ends = array<i64: 1, 8, 64>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x104xf32>) -> tensor<1x8x32xf32>
  %c = npu_graph.slice %qkv {starts = array<i64: 0, 0, 72>, ends = array<i64: 1, 8, 104>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x104xf32>) -> tensor<1x8x32xf32>
  %x = npu_graph.reshape %a : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %y = npu_graph.reshape %b : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %z = npu_graph.reshape %c : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %q = npu_graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %kt = npu_graph.transpose %y {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x16x8xf32>
  %v = npu_graph.transpose %z {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  %p = npu_graph.softmax %s {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %r = npu_graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
  func.return %r : tensor<1x8x2x16xf32>
}

// -----

// ViT's form: the projection reshaped to [B, S, 3, H, D], permuted to [3, B, H, S, D]
// and gathered (a slice and a reshape) at 0, 1 and 2; k transposed for the product.
// The attention reads the three as head windows of one [B, S, 3 H, D] view; the
// permutation (a copy kernel) and the slices go.
// CHECK-LABEL: func.func @vit
// CHECK-NEXT:    %[[V:.*]] = npu_graph.reshape %y : (tensor<1x8x3x2x16xf32>) -> tensor<1x8x6x16xf32>
// CHECK-NEXT:    %[[A:.*]] = npu_graph.attention %[[V]], %[[V]], %[[V]] {scale = 2.500000e-01 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>, head_window = array<i64: 0, 2, 4, 2>}
// CHECK-NEXT:    func.return %[[A]]
func.func @vit(%y: tensor<1x8x3x2x16xf32>) -> tensor<1x8x2x16xf32> {
  %c = npu_graph.constant {value = dense<0.25> : tensor<f32>} : tensor<f32>
  %t = npu_graph.transpose %y {perm = array<i64: 2, 0, 3, 1, 4>} : (tensor<1x8x3x2x16xf32>) -> tensor<3x1x2x8x16xf32>
  %a = npu_graph.slice %t {starts = array<i64: 0, 0, 0, 0, 0>, ends = array<i64: 1, 1, 2, 8, 16>, steps = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x1x2x8x16xf32>) -> tensor<1x1x2x8x16xf32>
  %b = npu_graph.slice %t {starts = array<i64: 1, 0, 0, 0, 0>, ends = array<i64: 2, 1, 2, 8, 16>, steps = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x1x2x8x16xf32>) -> tensor<1x1x2x8x16xf32>
  %e = npu_graph.slice %t {starts = array<i64: 2, 0, 0, 0, 0>, ends = array<i64: 3, 1, 2, 8, 16>, steps = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x1x2x8x16xf32>) -> tensor<1x1x2x8x16xf32>
  %q = npu_graph.reshape %a : (tensor<1x1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %k = npu_graph.reshape %b : (tensor<1x1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %v = npu_graph.reshape %e : (tensor<1x1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %kt = npu_graph.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x16xf32>) -> tensor<1x2x16x8xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  %d = npu_graph.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %p = npu_graph.softmax %d {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %r = npu_graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
  func.return %r : tensor<1x8x2x16xf32>
}

// -----

// Must not read through another permutation of the projection (here [G, B, S, H, D]:
// the slices are not one head group each); the permutation stays.
// CHECK-LABEL: func.func @other_group_perm
// CHECK:         npu_graph.transpose %y {perm = array<i64: 2, 0, 1, 3, 4>}
// CHECK:         npu_graph.attention
// CHECK-NOT:     head_window
func.func @other_group_perm(%y: tensor<1x8x3x2x16xf32>) -> tensor<1x8x2x16xf32> {
  %t = npu_graph.transpose %y {perm = array<i64: 2, 0, 1, 3, 4>} : (tensor<1x8x3x2x16xf32>) -> tensor<3x1x8x2x16xf32>
  %a = npu_graph.slice %t {starts = array<i64: 0, 0, 0, 0, 0>, ends = array<i64: 1, 1, 8, 2, 16>, steps = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x1x8x2x16xf32>) -> tensor<1x1x8x2x16xf32>
  %b = npu_graph.slice %t {starts = array<i64: 1, 0, 0, 0, 0>, ends = array<i64: 2, 1, 8, 2, 16>, steps = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x1x8x2x16xf32>) -> tensor<1x1x8x2x16xf32>
  %e = npu_graph.slice %t {starts = array<i64: 2, 0, 0, 0, 0>, ends = array<i64: 3, 1, 8, 2, 16>, steps = array<i64: 1, 1, 1, 1, 1>} : (tensor<3x1x8x2x16xf32>) -> tensor<1x1x8x2x16xf32>
  %x = npu_graph.reshape %a : (tensor<1x1x8x2x16xf32>) -> tensor<1x8x2x16xf32>
  %w = npu_graph.reshape %b : (tensor<1x1x8x2x16xf32>) -> tensor<1x8x2x16xf32>
  %z = npu_graph.reshape %e : (tensor<1x1x8x2x16xf32>) -> tensor<1x8x2x16xf32>
  %q = npu_graph.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %kt = npu_graph.transpose %w {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x16x8xf32>
  %v = npu_graph.transpose %z {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %s = npu_graph.matmul %q, %kt : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  %p = npu_graph.softmax %s {axis = -1 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = npu_graph.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %r = npu_graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
  func.return %r : tensor<1x8x2x16xf32>
}
