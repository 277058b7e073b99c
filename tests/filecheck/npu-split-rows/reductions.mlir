// RUN: %opt %s --split-input-file -p npu-split-rows | filecheck %s

// A max over every element of a [3, 64, 64] tensor (48 KiB) on 8 KiB of SRAM: the
// last axis (256 bytes, within a quarter of SRAM) first, keeping its dim, then the
// rest as asked (keepdims false).
// CHECK-LABEL: func.func @all_axes
// CHECK-NEXT:    %[[A:.*]] = npu_graph.reduce_max %x {axes = array<i64: 2>, keepdims = true} : (tensor<3x64x64xf32>) -> tensor<3x64x1xf32>
// CHECK-NEXT:    %[[B:.*]] = npu_graph.reduce_max %[[A]] {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<3x64x1xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return %[[B]]
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 8192>} {
  func.func @all_axes(%x: tensor<3x64x64xf32>) -> tensor<f32> {
    %m = npu_graph.reduce_max %x {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<3x64x64xf32>) -> tensor<f32>
    func.return %m : tensor<f32>
  }
}

// -----

// A mean over one 10,000-wide axis: the axis alone passes a quarter of SRAM, so it is
// viewed as [20, 500] (500: its largest divisor that fits); the mean of the 20
// groups' means, then the dims as asked (a reshape drops the viewed one).
// CHECK-LABEL: func.func @long_axis
// CHECK-NEXT:    %[[V:.*]] = npu_graph.reshape %x : (tensor<2x10000xf32>) -> tensor<2x20x500xf32>
// CHECK-NEXT:    %[[A:.*]] = npu_graph.reduce_mean %[[V]] {axes = array<i64: 2>, keepdims = true} : (tensor<2x20x500xf32>) -> tensor<2x20x1xf32>
// CHECK-NEXT:    %[[B:.*]] = npu_graph.reduce_mean %[[A]] {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x20x1xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:    %[[R:.*]] = npu_graph.reshape %[[B]] : (tensor<2x1x1xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    func.return %[[R]]
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 8192>} {
  func.func @long_axis(%x: tensor<2x10000xf32>) -> tensor<2x1xf32> {
    %m = npu_graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x10000xf32>) -> tensor<2x1xf32>
    func.return %m : tensor<2x1xf32>
  }
}

// -----

// A dequantizing sum (what npu-fuse-qdq makes of a reduction of a dequantized 8-bit
// tensor) dequantizes in the first reduction; the second sums f32 partial sums.
// CHECK-LABEL: func.func @dequantizing
// CHECK-NEXT:    %[[A:.*]] = npu_graph.reduce_sum %x {axes = array<i64: 2>, keepdims = true, input_scale = 5.000000e-01 : f32, input_zero_point = 3.000000e+00 : f32} : (tensor<4x8x4096xi8>) -> tensor<4x8x1xf32>
// CHECK-NEXT:    %[[B:.*]] = npu_graph.reduce_sum %[[A]] {axes = array<i64: 1, 2>, keepdims = false} : (tensor<4x8x1xf32>) -> tensor<4xf32>
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @dequantizing(%x: tensor<4x8x4096xi8>) -> tensor<4xf32> {
    %m = npu_graph.reduce_sum %x {axes = array<i64: 1, 2>, keepdims = false, input_scale = 0.5 : f32, input_zero_point = 3.0 : f32} : (tensor<4x8x4096xi8>) -> tensor<4xf32>
    func.return %m : tensor<4xf32>
  }
}

// -----

// Not split: a reduction whose elements per result fit SRAM (4 KiB of the 8 KiB), one
// inside a fused kernel (its kernel holds it whole), and one over a prime extent
// (no view of it as two fits: npu-tile reports it).
// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    npu_graph.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<8x1024xf32>) -> tensor<8xf32>
// CHECK-NEXT:    npu_graph.fused
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      npu_graph.reduce_max %{{.*}} {axes = array<i64: 1>, keepdims = false} : (tensor<2x10000xf32>) -> tensor<2xf32>
// CHECK:         npu_graph.reduce_sum %p {axes = array<i64: 0>, keepdims = false} : (tensor<10007xf32>) -> tensor<f32>
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 8192>} {
  func.func @kept(%x: tensor<8x1024xf32>, %y: tensor<2x10000xf32>, %p: tensor<10007xf32>) -> (tensor<8xf32>, tensor<2xf32>, tensor<f32>) {
    %a = npu_graph.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<8x1024xf32>) -> tensor<8xf32>
    %b = npu_graph.fused(%y) {kernel = "k", rule = "eltwise-chain"} : (tensor<2x10000xf32>) -> tensor<2xf32> {
    ^bb0(%0: tensor<2x10000xf32>):
      %r = npu_graph.reduce_max %0 {axes = array<i64: 1>, keepdims = false} : (tensor<2x10000xf32>) -> tensor<2xf32>
      npu_graph.yield %r : tensor<2xf32>
    }
    %c = npu_graph.reduce_sum %p {axes = array<i64: 0>, keepdims = false} : (tensor<10007xf32>) -> tensor<f32>
    func.return %a, %b, %c : tensor<8xf32>, tensor<2xf32>, tensor<f32>
  }
}
