// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s
// RUN: %opt %s --split-input-file -p npu-fuse --remarks -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK

// Where `matmul-prologue` must not fire (a core has 32 KiB of SRAM; each LayerNorm
// result is 64 KiB unless said otherwise): the LayerNorm stays whole and a remark
// says why.

// A post-LN block: the LayerNorm's result is also the residual of a later add, so it
// is written anyway.
// CHECK-LABEL: func.func @post_ln
// CHECK:         npu_graph.layernorm %x
// CHECK-NOT:     npu_graph.row_stats
// REMARK: remark: npu-fuse: missed: [ln] matmul-prologue: not a prologue of its matmuls: its result is also read by 'npu_graph.add' (residual), so it is written anyway
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @post_ln(%x: tensor<1024x16xf32>, %g: tensor<16xf32>, %w: tensor<16x16xf32>) -> tensor<1024x16xf32> {
    %h = npu_graph.layernorm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1024x16xf32>, tensor<16xf32>) -> tensor<1024x16xf32> loc("ln")
    %p = npu_graph.matmul %h, %w : (tensor<1024x16xf32>, tensor<16x16xf32>) -> tensor<1024x16xf32> loc("proj")
    %r = npu_graph.add %p, %h : (tensor<1024x16xf32>, tensor<1024x16xf32>) -> tensor<1024x16xf32> loc("residual")
    func.return %r : tensor<1024x16xf32>
  }
}

// -----

// The LayerNorm's result (4 KiB) fits a core's SRAM: a layer group can keep it there.
// CHECK-LABEL: func.func @fits
// CHECK:         npu_graph.layernorm %x
// REMARK: remark: npu-fuse: missed: [ln] matmul-prologue: not a prologue of its matmuls: its result (4096 bytes) fits a core's SRAM (32768), where a layer group can keep it
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @fits(%x: tensor<64x16xf32>, %g: tensor<16xf32>, %w: tensor<16x8xf32>) -> tensor<64x8xf32> {
    %h = npu_graph.layernorm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<64x16xf32>, tensor<16xf32>) -> tensor<64x16xf32> loc("ln")
    %p = npu_graph.matmul %h, %w : (tensor<64x16xf32>, tensor<16x8xf32>) -> tensor<64x8xf32> loc("proj")
    func.return %p : tensor<64x8xf32>
  }
}

// -----

// The LayerNorm's result is the matmul's right operand, not its left.
// CHECK-LABEL: func.func @right_operand
// CHECK:         npu_graph.layernorm %x
// REMARK: remark: npu-fuse: missed: [ln] matmul-prologue: not a prologue of its matmuls: its result is also read by 'npu_graph.matmul' (proj), so it is written anyway
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @right_operand(%x: tensor<1024x16xf32>, %g: tensor<16xf32>, %a: tensor<8x1024xf32>) -> tensor<8x16xf32> {
    %h = npu_graph.layernorm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1024x16xf32>, tensor<16xf32>) -> tensor<1024x16xf32> loc("ln")
    %p = npu_graph.matmul %a, %h : (tensor<8x1024xf32>, tensor<1024x16xf32>) -> tensor<8x16xf32> loc("proj")
    func.return %p : tensor<8x16xf32>
  }
}

// -----

// A gemm reading the LayerNorm transposed (trans_a): its tiles hold columns of rows.
// CHECK-LABEL: func.func @trans_a
// CHECK:         npu_graph.layernorm %x
// REMARK: remark: npu-fuse: missed: [ln] matmul-prologue: not a prologue of its matmuls: its result is also read by 'npu_graph.gemm' (proj), so it is written anyway
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @trans_a(%x: tensor<1024x16xf32>, %g: tensor<16xf32>, %w: tensor<1024x8xf32>) -> tensor<16x8xf32> {
    %h = npu_graph.layernorm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1024x16xf32>, tensor<16xf32>) -> tensor<1024x16xf32> loc("ln")
    %p = npu_graph.gemm %h, %w {trans_a = true} : (tensor<1024x16xf32>, tensor<1024x8xf32>) -> tensor<16x8xf32> loc("proj")
    func.return %p : tensor<16x8xf32>
  }
}

// -----

// A LayerNorm over the last two axes: its rows' statistics are not the matmul's rows'.
// CHECK-LABEL: func.func @two_axes
// CHECK:         npu_graph.layernorm %x
// REMARK: remark: npu-fuse: missed: [ln] matmul-prologue: not a prologue of its matmuls: it normalises more than the last axis
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 32768>} {
  func.func @two_axes(%x: tensor<4x256x16xf32>, %g: tensor<256x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x256x8xf32> {
    %h = npu_graph.layernorm %x, %g {axis = -2 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x256x16xf32>, tensor<256x16xf32>) -> tensor<4x256x16xf32> loc("ln")
    %p = npu_graph.matmul %h, %w : (tensor<4x256x16xf32>, tensor<16x8xf32>) -> tensor<4x256x8xf32> loc("proj")
    func.return %p : tensor<4x256x8xf32>
  }
}
