// RUN: %opt %s --split-input-file -p npu-split-rows | filecheck %s

// A softmax whose row (3000 floats in and out: 24000 bytes) passes the 8 KiB of
// SRAM: row statistics (max, sum of exp), then the elementwise pass.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %[[S:.*]] = npu_graph.row_stats %x {kind = "softmax"} : (tensor<4x3000xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[Y:.*]] = npu_graph.softmax_apply %x, %[[S]] : (tensor<4x3000xf32>, tensor<4x2xf32>) -> tensor<4x3000xf32>
// CHECK-NEXT:    func.return %[[Y]]
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 8192>} {
  func.func @softmax(%x: tensor<4x3000xf32>) -> tensor<4x3000xf32> {
    %s = npu_graph.softmax %x {axis = -1 : i64} : (tensor<4x3000xf32>) -> tensor<4x3000xf32>
    func.return %s : tensor<4x3000xf32>
  }
}

// -----

// A layer normalisation over a 2048-wide row: moments (count, mean, M2), then the
// elementwise pass with scale and bias.
// CHECK-LABEL: func.func @layernorm
// CHECK:         %[[S:.*]] = npu_graph.row_stats %x {kind = "moments"} : (tensor<2x2048xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[Y:.*]] = npu_graph.layernorm_apply %x, %[[S]], %g, %b {epsilon = 1.000000e-05 : f32} : (tensor<2x2048xf32>, tensor<2x3xf32>, tensor<2048xf32>, tensor<2048xf32>) -> tensor<2x2048xf32>
// CHECK-NEXT:    func.return %[[Y]]
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 8192>} {
  func.func @layernorm(%x: tensor<2x2048xf32>, %g: tensor<2048xf32>, %b: tensor<2048xf32>) -> tensor<2x2048xf32> {
    %l = npu_graph.layernorm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x2048xf32>, tensor<2048xf32>, tensor<2048xf32>) -> tensor<2x2048xf32>
    func.return %l : tensor<2x2048xf32>
  }
}

// -----

// Not split: rows that fit (1000 floats in and out: 8000 bytes), a softmax over
// another axis, a layer normalisation over two dims.
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     npu_graph.row_stats
// CHECK:         npu_graph.softmax %x {axis = -1 : i64}
// CHECK-NEXT:    npu_graph.softmax %y {axis = 0 : i64}
// CHECK-NEXT:    npu_graph.layernorm %y, %g {axis = 0 : i64
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 8192>} {
  func.func @kept(%x: tensor<4x1000xf32>, %y: tensor<3000x2xf32>, %g: tensor<3000x2xf32>) -> (tensor<4x1000xf32>, tensor<3000x2xf32>, tensor<3000x2xf32>) {
    %a = npu_graph.softmax %x {axis = -1 : i64} : (tensor<4x1000xf32>) -> tensor<4x1000xf32>
    %b = npu_graph.softmax %y {axis = 0 : i64} : (tensor<3000x2xf32>) -> tensor<3000x2xf32>
    %c = npu_graph.layernorm %y, %g {axis = 0 : i64, epsilon = 1.0e-05 : f32} : (tensor<3000x2xf32>, tensor<3000x2xf32>) -> tensor<3000x2xf32>
    func.return %a, %b, %c : tensor<4x1000xf32>, tensor<3000x2xf32>, tensor<3000x2xf32>
  }
}
