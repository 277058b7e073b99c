// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s
// RUN: %opt %s --split-input-file -p 'npu-fuse{disable=kv-append}' | filecheck %s --check-prefix=OFF
// RUN: %opt %s --split-input-file -p npu-fuse --remarks -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK

// The `kv-append` rule: a decoder step's attention reads the KV cache with the new
// rows appended (k = concat(past_k, new_k), v = concat(past_v, new_v) along the keys)
// and returns both concats (`present`): one kernel of the two concats and the
// attention, with three results. Switched off, the concats stay apart.
// CHECK-LABEL: func.func @decode
// CHECK-NEXT:    %[[O:.*]], %[[PK2:.*]], %[[PV2:.*]] = npu_graph.fused(%pk, %nk, %pv, %nv, %q) {kernel = "attn", rule = "kv-append"} : (tensor<2x4x15x8xf32>, tensor<2x4x1x8xf32>, tensor<2x4x15x8xf32>, tensor<2x4x1x8xf32>, tensor<2x4x1x8xf32>) -> (tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
// CHECK-NEXT:    ^bb0(%[[PK:.*]]: tensor<2x4x15x8xf32>, %[[NK:.*]]: tensor<2x4x1x8xf32>, %[[PV:.*]]: tensor<2x4x15x8xf32>, %[[NV:.*]]: tensor<2x4x1x8xf32>, %[[Q:.*]]: tensor<2x4x1x8xf32>):
// CHECK-NEXT:      %[[K:.*]] = npu_graph.concat %[[PK]], %[[NK]] {axis = 2 : i64}
// CHECK-NEXT:      %[[V:.*]] = npu_graph.concat %[[PV]], %[[NV]] {axis = 2 : i64}
// CHECK-NEXT:      %[[A:.*]] = npu_graph.attention %[[Q]], %[[K]], %[[V]] {scale = 3.535530e-01 : f32, key_rows}
// CHECK-NEXT:      npu_graph.yield %[[A]], %[[K]], %[[V]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[O]], %[[PK2]], %[[PV2]]
// OFF-LABEL:   func.func @decode
// OFF-NEXT:      npu_graph.concat
// OFF-NEXT:      npu_graph.concat
// OFF-NEXT:      npu_graph.attention
// REMARK: remark: npu-fuse: applied: [k, v, attn] kv-append: the attention reads the 15 cached positions and the new ones in one pass and writes the present cache as it reads (no concat copies)
func.func @decode(%q: tensor<2x4x1x8xf32>, %pk: tensor<2x4x15x8xf32>, %nk: tensor<2x4x1x8xf32>, %pv: tensor<2x4x15x8xf32>, %nv: tensor<2x4x1x8xf32>) -> (tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
  %k = npu_graph.concat %pk, %nk {axis = 2 : i64} : (tensor<2x4x15x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x16x8xf32> loc("k")
  %v = npu_graph.concat %pv, %nv {axis = 2 : i64} : (tensor<2x4x15x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x16x8xf32> loc("v")
  %o = npu_graph.attention %q, %k, %v {scale = 0.353553 : f32, key_rows} : (tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x1x8xf32> loc("attn")
  func.return %o, %k, %v : tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
}

// -----

// Not fired: the concats join along the head dim (not the keys), the past key and
// value hold different numbers of positions, only k is a concat, and k and v are
// the same concat.
// CHECK-LABEL: func.func @heads
// CHECK-NOT:     kv-append
// CHECK:         npu_graph.attention
func.func @heads(%q: tensor<2x4x1x8xf32>, %pk: tensor<2x3x16x8xf32>, %nk: tensor<2x1x16x8xf32>, %pv: tensor<2x3x16x8xf32>, %nv: tensor<2x1x16x8xf32>) -> tensor<2x4x1x8xf32> {
  %k = npu_graph.concat %pk, %nk {axis = 1 : i64} : (tensor<2x3x16x8xf32>, tensor<2x1x16x8xf32>) -> tensor<2x4x16x8xf32>
  %v = npu_graph.concat %pv, %nv {axis = 1 : i64} : (tensor<2x3x16x8xf32>, tensor<2x1x16x8xf32>) -> tensor<2x4x16x8xf32>
  %o = npu_graph.attention %q, %k, %v {scale = 0.353553 : f32, key_rows} : (tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x1x8xf32>
  func.return %o : tensor<2x4x1x8xf32>
}

// -----

// CHECK-LABEL: func.func @uneven
// CHECK-NOT:     kv-append
// CHECK:         npu_graph.attention
func.func @uneven(%q: tensor<2x4x1x8xf32>, %pk: tensor<2x4x15x8xf32>, %nk: tensor<2x4x1x8xf32>, %pv: tensor<2x4x14x8xf32>, %nv: tensor<2x4x2x8xf32>) -> tensor<2x4x1x8xf32> {
  %k = npu_graph.concat %pk, %nk {axis = 2 : i64} : (tensor<2x4x15x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x16x8xf32>
  %v = npu_graph.concat %pv, %nv {axis = 2 : i64} : (tensor<2x4x14x8xf32>, tensor<2x4x2x8xf32>) -> tensor<2x4x16x8xf32>
  %o = npu_graph.attention %q, %k, %v {scale = 0.353553 : f32, key_rows} : (tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x1x8xf32>
  func.return %o : tensor<2x4x1x8xf32>
}

// -----

// CHECK-LABEL: func.func @k_only
// CHECK-NOT:     kv-append
// CHECK:         npu_graph.attention
func.func @k_only(%q: tensor<2x4x1x8xf32>, %pk: tensor<2x4x15x8xf32>, %nk: tensor<2x4x1x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x1x8xf32> {
  %k = npu_graph.concat %pk, %nk {axis = 2 : i64} : (tensor<2x4x15x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x16x8xf32>
  %o = npu_graph.attention %q, %k, %v {scale = 0.353553 : f32, key_rows} : (tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x1x8xf32>
  func.return %o : tensor<2x4x1x8xf32>
}

// -----

// CHECK-LABEL: func.func @same
// CHECK-NOT:     kv-append
// CHECK:         npu_graph.attention
func.func @same(%q: tensor<2x4x1x8xf32>, %pk: tensor<2x4x15x8xf32>, %nk: tensor<2x4x1x8xf32>) -> tensor<2x4x1x8xf32> {
  %k = npu_graph.concat %pk, %nk {axis = 2 : i64} : (tensor<2x4x15x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x16x8xf32>
  %o = npu_graph.attention %q, %k, %k {scale = 0.353553 : f32, key_rows} : (tensor<2x4x1x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x1x8xf32>
  func.return %o : tensor<2x4x1x8xf32>
}

// -----

// The present cache read before the attention (an f16 model's cast back to f32 of each
// present output, placed after its concat): the readers move after the kernel, in order.
// CHECK-LABEL: func.func @present_read_early
// CHECK-NEXT:    %[[O:.*]], %[[PK:.*]], %[[PV:.*]] = npu_graph.fused(%pk, %nk, %pv, %nv, %q) {kernel = "attn", rule = "kv-append"}
// CHECK:         npu_graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %ck = npu_graph.cast %[[PK]] : (tensor<2x4x16x8xf16>) -> tensor<2x4x16x8xf32>
// CHECK-NEXT:    %cv = npu_graph.cast %[[PV]] : (tensor<2x4x16x8xf16>) -> tensor<2x4x16x8xf32>
// CHECK-NEXT:    func.return %[[O]], %ck, %cv
func.func @present_read_early(%q: tensor<2x4x1x8xf16>, %pk: tensor<2x4x15x8xf16>, %nk: tensor<2x4x1x8xf16>, %pv: tensor<2x4x15x8xf16>, %nv: tensor<2x4x1x8xf16>) -> (tensor<2x4x1x8xf16>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
  %k = npu_graph.concat %pk, %nk {axis = 2 : i64} : (tensor<2x4x15x8xf16>, tensor<2x4x1x8xf16>) -> tensor<2x4x16x8xf16> loc("k")
  %ck = npu_graph.cast %k : (tensor<2x4x16x8xf16>) -> tensor<2x4x16x8xf32>
  %v = npu_graph.concat %pv, %nv {axis = 2 : i64} : (tensor<2x4x15x8xf16>, tensor<2x4x1x8xf16>) -> tensor<2x4x16x8xf16> loc("v")
  %cv = npu_graph.cast %v : (tensor<2x4x16x8xf16>) -> tensor<2x4x16x8xf32>
  %o = npu_graph.attention %q, %k, %v {scale = 0.353553 : f32, key_rows} : (tensor<2x4x1x8xf16>, tensor<2x4x16x8xf16>, tensor<2x4x16x8xf16>) -> tensor<2x4x1x8xf16> loc("attn")
  func.return %o, %ck, %cv : tensor<2x4x1x8xf16>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
}
