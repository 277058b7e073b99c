// RUN: %roundtrip
// Every npu_graph op with its attributes prints and re-parses unchanged.

builtin.module {
  // CHECK-LABEL: func.func @graph
  func.func @graph(%x: tensor<1x3x8x8xf32>, %m: tensor<4x8xf32>, %bm: tensor<2x8x5xf32>) -> tensor<1x64xf32> {
    // A constant names a weight of the side file or holds a dense literal.
    // CHECK: %w = npu_graph.constant {weight = "conv.w"} : tensor<4x3x3x3xf32>
    // CHECK: %b = npu_graph.constant {value = dense<1.000000e+00> : tensor<4xf32>} : tensor<4xf32>
    %w = npu_graph.constant {weight = "conv.w"} : tensor<4x3x3x3xf32>
    %b = npu_graph.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>

    // conv2d with every attribute and a bias, and with neither.
    // CHECK: %c = npu_graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    // CHECK: %c2 = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    %c = npu_graph.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %c2 = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>

    // gemm with C, alpha, beta and transposes; matmul with a broadcast batch dimension.
    // CHECK: %g = npu_graph.gemm %m, %gb, %gc {alpha = 2.000000e+00 : f32, beta = 5.000000e-01 : f32, trans_b = true} : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
    // CHECK: %g2 = npu_graph.gemm %m, %m {trans_a = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    // CHECK: %mm = npu_graph.matmul %m, %bm : (tensor<4x8xf32>, tensor<2x8x5xf32>) -> tensor<2x4x5xf32>
    %gb = npu_graph.constant {weight = "fc.w"} : tensor<6x8xf32>
    %gc = npu_graph.constant {value = dense<0.5> : tensor<6xf32>} : tensor<6xf32>
    %g = npu_graph.gemm %m, %gb, %gc {alpha = 2.0 : f32, beta = 0.5 : f32, trans_b = true} : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
    %g2 = npu_graph.gemm %m, %m {trans_a = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %mm = npu_graph.matmul %m, %bm : (tensor<4x8xf32>, tensor<2x8x5xf32>) -> tensor<2x4x5xf32>

    // Elementwise ops, the binary ones broadcasting.
    // CHECK: %r = npu_graph.relu %c : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    // CHECK: %a = npu_graph.add %r, %bb : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>
    // CHECK: %mu = npu_graph.mul %a, %bb : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>
    // CHECK: %s = npu_graph.sub %mu, %a : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    // CHECK: %d = npu_graph.div %s, %bb : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>
    %r = npu_graph.relu %c : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %bb = npu_graph.constant {value = dense<2.0> : tensor<1x4x1x1xf32>} : tensor<1x4x1x1xf32>
    %a = npu_graph.add %r, %bb : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>
    %mu = npu_graph.mul %a, %bb : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>
    %s = npu_graph.sub %mu, %a : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %d = npu_graph.div %s, %bb : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>

    // CHECK: %p = npu_graph.maxpool %d {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    // CHECK: %f = npu_graph.reshape %p : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
    %p = npu_graph.maxpool %d {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    %f = npu_graph.reshape %p : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>

    // A fused kernel: the block arguments are the operands, yield gives the results.
    // CHECK:      %k = npu_graph.fused(%c2, %b) {kernel = "k", rule = "conv-epilogue"} : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32> {
    // CHECK-NEXT: ^bb0(%i: tensor<1x4x6x6xf32>, %j: tensor<4xf32>):
    // CHECK-NEXT:   %e = npu_graph.relu %i : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
    // CHECK-NEXT:   npu_graph.yield %e : tensor<1x4x6x6xf32>
    // CHECK-NEXT: }
    %k = npu_graph.fused (%c2, %b) {kernel = "k", rule = "conv-epilogue"} : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32> {
    ^bb0(%i: tensor<1x4x6x6xf32>, %j: tensor<4xf32>):
      %e = npu_graph.relu %i : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
      npu_graph.yield %e : tensor<1x4x6x6xf32>
    }
    func.return %f : tensor<1x64xf32>
  }
}
