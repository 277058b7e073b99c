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

  // CHECK-LABEL: func.func @more_ops
  func.func @more_ops(%x: tensor<2x3x8x8xf32>, %s: tensor<8xf32>, %i: tensor<2x5xf32>, %t: tensor<4x4xf32>,
                      %v: tensor<2x3x9xf32>, %vol: tensor<1x2x6x5x5xf32>) {
    // Unary, binary and three-operand elementwise ops (all broadcast like numpy).
    // CHECK: %sg = npu_graph.sigmoid %x : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %th = npu_graph.tanh %sg : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %ef = npu_graph.erf %th : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %ge = npu_graph.gelu %ef : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %gt = npu_graph.gelu_tanh %ge : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %sq = npu_graph.sqrt %gt : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %ep = npu_graph.exp %sq : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %lg = npu_graph.log %ep : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %ng = npu_graph.neg %lg : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %ab = npu_graph.abs %ng : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %rc = npu_graph.reciprocal %ab : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %tc = npu_graph.trunc %rc : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %sg = npu_graph.sigmoid %x : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %th = npu_graph.tanh %sg : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %ef = npu_graph.erf %th : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %ge = npu_graph.gelu %ef : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %gt = npu_graph.gelu_tanh %ge : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %sq = npu_graph.sqrt %gt : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %ep = npu_graph.exp %sq : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %lg = npu_graph.log %ep : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %ng = npu_graph.neg %lg : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %ab = npu_graph.abs %ng : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %rc = npu_graph.reciprocal %ab : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %tc = npu_graph.trunc %rc : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // The unary functions defined from a table (SIMPLE_UNARY), and the two remainders.
    // CHECK: %u_floor = npu_graph.floor %tc : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_ceil = npu_graph.ceil %u_floor : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_round = npu_graph.round %u_ceil : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_sign = npu_graph.sign %u_round : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_sin = npu_graph.sin %u_sign : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_cos = npu_graph.cos %u_sin : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_tan = npu_graph.tan %u_cos : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_asin = npu_graph.asin %u_tan : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_acos = npu_graph.acos %u_asin : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_atan = npu_graph.atan %u_acos : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_sinh = npu_graph.sinh %u_atan : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_cosh = npu_graph.cosh %u_sinh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_asinh = npu_graph.asinh %u_cosh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_acosh = npu_graph.acosh %u_asinh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_atanh = npu_graph.atanh %u_acosh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_softplus = npu_graph.softplus %u_atanh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_isnan = npu_graph.isnan %u_softplus : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %u_isinf = npu_graph.isinf %u_isnan : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %fm = npu_graph.fmod %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %md = npu_graph.mod %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %u_floor = npu_graph.floor %tc : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_ceil = npu_graph.ceil %u_floor : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_round = npu_graph.round %u_ceil : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_sign = npu_graph.sign %u_round : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_sin = npu_graph.sin %u_sign : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_cos = npu_graph.cos %u_sin : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_tan = npu_graph.tan %u_cos : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_asin = npu_graph.asin %u_tan : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_acos = npu_graph.acos %u_asin : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_atan = npu_graph.atan %u_acos : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_sinh = npu_graph.sinh %u_atan : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_cosh = npu_graph.cosh %u_sinh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_asinh = npu_graph.asinh %u_cosh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_acosh = npu_graph.acosh %u_asinh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_atanh = npu_graph.atanh %u_acosh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_softplus = npu_graph.softplus %u_atanh : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_isnan = npu_graph.isnan %u_softplus : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %u_isinf = npu_graph.isinf %u_isnan : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %fm = npu_graph.fmod %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %md = npu_graph.mod %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %pw = npu_graph.pow %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %pr = npu_graph.prelu %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %mx = npu_graph.max %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %mn = npu_graph.min %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %eq = npu_graph.equal %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %ls = npu_graph.less %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %gr = npu_graph.greater %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %cl = npu_graph.clip %x, %lo, %hi : (tensor<2x3x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3x8x8xf32>
    // CHECK: %wh = npu_graph.where %gr, %x, %s : (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %ex = npu_graph.expand %s : (tensor<8xf32>) -> tensor<3x8xf32>
    %pw = npu_graph.pow %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %pr = npu_graph.prelu %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %mx = npu_graph.max %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %mn = npu_graph.min %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %eq = npu_graph.equal %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %ls = npu_graph.less %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %gr = npu_graph.greater %x, %s : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %lo = npu_graph.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %hi = npu_graph.constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
    %cl = npu_graph.clip %x, %lo, %hi : (tensor<2x3x8x8xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3x8x8xf32>
    %wh = npu_graph.where %gr, %x, %s : (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %ex = npu_graph.expand %s : (tensor<8xf32>) -> tensor<3x8xf32>

    // Structured ops: normalisation, reductions, data movement, pooling.
    // CHECK: %ln = npu_graph.layernorm %x, %s, %s {axis = -1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<2x3x8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %ln2 = npu_graph.layernorm %x, %s {axis = 3 : i64} : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %rm = npu_graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true} : (tensor<2x3x8x8xf32>) -> tensor<2x3x1x1xf32>
    // CHECK: %rs = npu_graph.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x8x8xf32>) -> tensor<2x8x8xf32>
    // CHECK: %rx = npu_graph.reduce_max %x {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x3x8x8xf32>) -> tensor<f32>
    // CHECK: %rn = npu_graph.reduce_min %x {axes = array<i64: 3>, keepdims = true} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
    %ln = npu_graph.layernorm %x, %s, %s {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %ln2 = npu_graph.layernorm %x, %s {axis = 3 : i64} : (tensor<2x3x8x8xf32>, tensor<8xf32>) -> tensor<2x3x8x8xf32>
    %rm = npu_graph.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true} : (tensor<2x3x8x8xf32>) -> tensor<2x3x1x1xf32>
    %rs = npu_graph.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x8x8xf32>) -> tensor<2x8x8xf32>
    %rx = npu_graph.reduce_max %x {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x3x8x8xf32>) -> tensor<f32>
    %rn = npu_graph.reduce_min %x {axes = array<i64: 3>, keepdims = true} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x1xf32>
    // CHECK: %cc = npu_graph.concat %x, %x, %x {axis = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>) -> tensor<2x9x8x8xf32>
    // CHECK: %sl = npu_graph.slice %x {starts = array<i64: 0, 1, 7, 0>, ends = array<i64: 2, 3, -1, 8>, steps = array<i64: 1, 1, -2, 3>} : (tensor<2x3x8x8xf32>) -> tensor<2x2x4x3xf32>
    // CHECK: %ga = npu_graph.gather %t, %i {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2x5xf32>) -> tensor<2x5x4xf32>
    // CHECK: %tr = npu_graph.trilu %t {upper = false, k = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK: %pd = npu_graph.pad %t {pads = array<i64: 1, 0, -1, 2>, value = 0.000000e+00 : f32} : (tensor<4x4xf32>) -> tensor<4x6xf32>
    %cc = npu_graph.concat %x, %x, %x {axis = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>) -> tensor<2x9x8x8xf32>
    %sl = npu_graph.slice %x {starts = array<i64: 0, 1, 7, 0>, ends = array<i64: 2, 3, -1, 8>, steps = array<i64: 1, 1, -2, 3>} : (tensor<2x3x8x8xf32>) -> tensor<2x2x4x3xf32>
    %ga = npu_graph.gather %t, %i {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2x5xf32>) -> tensor<2x5x4xf32>
    %tr = npu_graph.trilu %t {upper = false, k = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %pd = npu_graph.pad %t {pads = array<i64: 1, 0, -1, 2>, value = 0.0 : f32} : (tensor<4x4xf32>) -> tensor<4x6xf32>
    // CHECK: %lr = npu_graph.lrn %x {size = 3 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    // CHECK: %ap = npu_graph.avgpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    %lr = npu_graph.lrn %x {size = 3 : i64, alpha = 1.0e-04 : f32, beta = 7.5e-01 : f32, bias = 1.0 : f32} : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
    %ap = npu_graph.avgpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    // A sum pool (npu-fuse-qdq's form of an average pool of an 8-bit tensor).
    // CHECK: %sp = npu_graph.sumpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    %sp = npu_graph.sumpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    // Pooling over any number of spatial dims (1-D, 3-D); the extra end padding of
    // ONNX ceil_mode=1 is a larger end pad (3x3 windows, stride 2 over 8: ceil 4, not 3).
    // CHECK: %ap1 = npu_graph.avgpool %v {kernel = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 2>, dilations = array<i64: 1>, count_include_pad = true} : (tensor<2x3x9xf32>) -> tensor<2x3x5xf32>
    // CHECK: %ap3 = npu_graph.avgpool %vol {kernel = array<i64: 2, 2, 2>, strides = array<i64: 1, 2, 2>, pads = array<i64: 0, 0, 0, 0, 1, 1>, dilations = array<i64: 2, 1, 1>, count_include_pad = false} : (tensor<1x2x6x5x5xf32>) -> tensor<1x2x4x3x3xf32>
    // CHECK: %mp1 = npu_graph.maxpool_nd %v {kernel = array<i64: 2>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<2x3x9xf32>) -> tensor<2x3x8xf32>
    // CHECK: %mp3 = npu_graph.maxpool_nd %vol {kernel = array<i64: 3, 3, 3>, strides = array<i64: 2, 2, 2>, pads = array<i64: 1, 1, 1, 1, 1, 2>, dilations = array<i64: 1, 1, 1>} : (tensor<1x2x6x5x5xf32>) -> tensor<1x2x3x3x3xf32>
    // CHECK: %mpc = npu_graph.maxpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    %ap1 = npu_graph.avgpool %v {kernel = array<i64: 3>, strides = array<i64: 2>, pads = array<i64: 1, 2>, dilations = array<i64: 1>, count_include_pad = true} : (tensor<2x3x9xf32>) -> tensor<2x3x5xf32>
    %ap3 = npu_graph.avgpool %vol {kernel = array<i64: 2, 2, 2>, strides = array<i64: 1, 2, 2>, pads = array<i64: 0, 0, 0, 0, 1, 1>, dilations = array<i64: 2, 1, 1>, count_include_pad = false} : (tensor<1x2x6x5x5xf32>) -> tensor<1x2x4x3x3xf32>
    %mp1 = npu_graph.maxpool_nd %v {kernel = array<i64: 2>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>} : (tensor<2x3x9xf32>) -> tensor<2x3x8xf32>
    %mp3 = npu_graph.maxpool_nd %vol {kernel = array<i64: 3, 3, 3>, strides = array<i64: 2, 2, 2>, pads = array<i64: 1, 1, 1, 1, 1, 2>, dilations = array<i64: 1, 1, 1>} : (tensor<1x2x6x5x5xf32>) -> tensor<1x2x3x3x3xf32>
    %mpc = npu_graph.maxpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    func.return
  }
  // Element types (docs/low-precision.md): quantize, dequantize, requantize, cast,
  // integer conv2d/matmul with zero points, data movement on integers, lookup tables,
  // the requantizing add.
  // CHECK-LABEL: func.func @typed
  func.func @typed(%x: tensor<1x4x6x6xf32>, %h: tensor<1x4x6x6xf16>, %s: tensor<1x4x1x1xf32>, %z: tensor<f32>, %w: tensor<8x4x3x3xi8>, %b: tensor<8xi32>, %m: tensor<6x5xui8>, %n: tensor<5x2xi8>) {
    // CHECK: %q = npu_graph.quantize %x, %s, %z : (tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>, tensor<f32>) -> tensor<1x4x6x6xi8>
    // CHECK: %qr = npu_graph.quantize %h, %s, %z {min = 0 : i64, max = 255 : i64} : (tensor<1x4x6x6xf16>, tensor<1x4x1x1xf32>, tensor<f32>) -> tensor<1x4x6x6xui8>
    // CHECK: %c = npu_graph.conv2d %q, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = -3 : i64} : (tensor<1x4x6x6xi8>, tensor<8x4x3x3xi8>, tensor<8xi32>) -> tensor<1x8x6x6xi32>
    // CHECK: %rq = npu_graph.requantize %c, %z, %z {min = 0 : i64, mode = "fixed"} : (tensor<1x8x6x6xi32>, tensor<f32>, tensor<f32>) -> tensor<1x8x6x6xi8>
    // CHECK: %dq = npu_graph.dequantize %rq, %z, %z : (tensor<1x8x6x6xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8x6x6xf32>
    // CHECK: %d32 = npu_graph.dequantize %b, %z, %z : (tensor<8xi32>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
    // CHECK: %mm = npu_graph.matmul %m, %n {input_zero_point = 128 : i64, weight_zero_point = -1 : i64} : (tensor<6x5xui8>, tensor<5x2xi8>) -> tensor<6x2xi32>
    // CHECK: %hf = npu_graph.cast %x : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf16>
    // CHECK: %bf = npu_graph.cast %hf : (tensor<1x4x6x6xf16>) -> tensor<1x4x6x6xbf16>
    // CHECK: %t = npu_graph.transpose %rq {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x6x6xi8>) -> tensor<1x6x6x8xi8>
    // CHECK: %r = npu_graph.reshape %t : (tensor<1x6x6x8xi8>) -> tensor<36x8xi8>
    // CHECK: %p = npu_graph.maxpool %rq {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x8x6x6xi8>) -> tensor<1x8x3x3xi8>
    // CHECK: %k = npu_graph.constant {value = dense<[1, -2]> : tensor<2xi8>} : tensor<2xi8>
    // CHECK: %tb = npu_graph.table %rq, %lut : (tensor<1x8x6x6xi8>, tensor<256xui8>) -> tensor<1x8x6x6xui8>
    // CHECK: %tc = npu_graph.table %rq, %lutc {axis = 1 : i64} : (tensor<1x8x6x6xi8>, tensor<8x256xi8>) -> tensor<1x8x6x6xi8>
    // CHECK: %qa = npu_graph.qadd %rq, %tc {a_scale = 2.500000e-01 : f32, a_zero_point = 0.000000e+00 : f32, b_scale = 0.0123456791 : f32, b_zero_point = -3.000000e+00 : f32, scale = 5.000000e-01 : f32, zero_point = 1.000000e+00 : f32, min = 1 : i64, mode = "fixed"} : (tensor<1x8x6x6xi8>, tensor<1x8x6x6xi8>) -> tensor<1x8x6x6xi8>
    %q = npu_graph.quantize %x, %s, %z : (tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>, tensor<f32>) -> tensor<1x4x6x6xi8>
    %qr = npu_graph.quantize %h, %s, %z {min = 0 : i64, max = 255 : i64} : (tensor<1x4x6x6xf16>, tensor<1x4x1x1xf32>, tensor<f32>) -> tensor<1x4x6x6xui8>
    %c = npu_graph.conv2d %q, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = -3 : i64} : (tensor<1x4x6x6xi8>, tensor<8x4x3x3xi8>, tensor<8xi32>) -> tensor<1x8x6x6xi32>
    %rq = npu_graph.requantize %c, %z, %z {min = 0 : i64, mode = "fixed"} : (tensor<1x8x6x6xi32>, tensor<f32>, tensor<f32>) -> tensor<1x8x6x6xi8>
    %dq = npu_graph.dequantize %rq, %z, %z : (tensor<1x8x6x6xi8>, tensor<f32>, tensor<f32>) -> tensor<1x8x6x6xf32>
    %d32 = npu_graph.dequantize %b, %z, %z : (tensor<8xi32>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
    %mm = npu_graph.matmul %m, %n {input_zero_point = 128 : i64, weight_zero_point = -1 : i64} : (tensor<6x5xui8>, tensor<5x2xi8>) -> tensor<6x2xi32>
    %hf = npu_graph.cast %x : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf16>
    %bf = npu_graph.cast %hf : (tensor<1x4x6x6xf16>) -> tensor<1x4x6x6xbf16>
    %t = npu_graph.transpose %rq {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x6x6xi8>) -> tensor<1x6x6x8xi8>
    %r = npu_graph.reshape %t : (tensor<1x6x6x8xi8>) -> tensor<36x8xi8>
    %p = npu_graph.maxpool %rq {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x8x6x6xi8>) -> tensor<1x8x3x3xi8>
    %k = npu_graph.constant {value = dense<[1, -2]> : tensor<2xi8>} : tensor<2xi8>
    %lut = npu_graph.constant {value = dense<3> : tensor<256xui8>} : tensor<256xui8>
    %lutc = npu_graph.constant {value = dense<-1> : tensor<8x256xi8>} : tensor<8x256xi8>
    %tb = npu_graph.table %rq, %lut : (tensor<1x8x6x6xi8>, tensor<256xui8>) -> tensor<1x8x6x6xui8>
    %tc = npu_graph.table %rq, %lutc {axis = 1 : i64} : (tensor<1x8x6x6xi8>, tensor<8x256xi8>) -> tensor<1x8x6x6xi8>
    %qa = npu_graph.qadd %rq, %tc {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.0123456791 : f32, b_zero_point = -3.0 : f32, scale = 0.5 : f32, zero_point = 1.0 : f32, min = 1 : i64, mode = "fixed"} : (tensor<1x8x6x6xi8>, tensor<1x8x6x6xi8>) -> tensor<1x8x6x6xi8>
    func.return
  }

  // A quantized attention (npu-fuse's attention rule on a QDQ chain): its parameters and score table.
  // CHECK-LABEL: func.func @quantized_attention
  // CHECK: %a = npu_graph.attention %q, %kt, %v, %mask {scale = 1.000000e+00 : f32, quant = array<f32: 0.000000e+00, 3.000000e+00, 0.000000e+00, 2.500000e-01, 0.000000e+00, -1.280000e+02, 1.270000e+02, 1.250000e-01, 0.000000e+00, 5.000000e-02, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.00787401572, 0.000000e+00, 0.000000e+00, 1.270000e+02, 5.000000e-01, 1.000000e+00, -1.280000e+02, 1.270000e+02, 0.000000e+00, 8.000000e+00>, score_table = array<i64: 0, 1, 2, {{.*}}, -2, -1>} : (tensor<1x2x4x8xi8>, tensor<1x2x8x4xi8>, tensor<1x2x4x8xi8>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xi8>
  func.func @quantized_attention(%q: tensor<1x2x4x8xi8>, %kt: tensor<1x2x8x4xi8>, %v: tensor<1x2x4x8xi8>, %mask: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xi8> {
    %a = npu_graph.attention %q, %kt, %v, %mask {scale = 1.000000e+00 : f32, quant = array<f32: 0.0, 3.0, 0.0, 0.25, 0.0, -128.0, 127.0, 0.125, 0.0, 0.05, 0.0, -128.0, 127.0, 0.00787401572, 0.0, 0.0, 127.0, 0.5, 1.0, -128.0, 127.0, 0.0, 8.0>, score_table = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, -128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1>} : (tensor<1x2x4x8xi8>, tensor<1x2x8x4xi8>, tensor<1x2x4x8xi8>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xi8>
    func.return %a : tensor<1x2x4x8xi8>
  }
}
