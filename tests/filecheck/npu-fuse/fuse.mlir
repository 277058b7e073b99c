// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s
// Each rule can be switched off; the others still apply.
// RUN: %opt %s --split-input-file -p 'npu-fuse{disable=conv-epilogue}' | filecheck %s --check-prefix=NOCONV
// RUN: %opt %s --split-input-file -p 'npu-fuse{disable=matmul-epilogue}' | filecheck %s --check-prefix=NOMM
// RUN: %opt %s --split-input-file -p 'npu-fuse{disable=eltwise-chain}' | filecheck %s --check-prefix=NOELT
// An unknown rule name is an error that lists the known ones.
// RUN: not npu-opt %s -p 'npu-fuse{disable=conv-epilogue,bogus}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: npu-fuse: unknown fusion rule(s) bogus (known: conv-bn, conv-prologue, conv-epilogue, matmul-epilogue, pool-epilogue, eltwise-chain, matmul-prologue, attention, kv-append, layer-group)

// conv-epilogue: conv2d + relu become one kernel named after the anchor's ONNX node.
// CHECK-LABEL: func.func @conv_relu
// CHECK:         %r = npu_graph.fused(%x, %w) {kernel = "conv", rule = "conv-epilogue"}
// CHECK-NEXT:    ^bb0(%0: tensor<1x3x8x8xf32>, %1: tensor<4x3x3x3xf32>):
// CHECK-NEXT:      %c = npu_graph.conv2d %0, %1
// CHECK-NEXT:      %r_1 = npu_graph.relu %c
// CHECK-NEXT:      npu_graph.yield %r_1
// CHECK:         func.return %r
// NOCONV-LABEL: func.func @conv_relu
// NOCONV:         %c = npu_graph.conv2d %x, %w
// NOCONV-NEXT:    %r = npu_graph.relu %c
// NOELT-LABEL: func.func @conv_relu
// NOELT:         rule = "conv-epilogue"
func.func @conv_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %c = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> loc("conv")
  %r = npu_graph.relu %c : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> loc("relu")
  func.return %r : tensor<1x4x6x6xf32>
}

// -----

// matmul-epilogue: gemm + bias add (broadcast [6] into [4, 6]) + relu. It runs
// before eltwise-chain, so the add/relu tail is not split off.
// CHECK-LABEL: func.func @gemm_bias_relu
// CHECK:         %r = npu_graph.fused(%a, %b, %bias) {kernel = "fc", rule = "matmul-epilogue"}
// CHECK:           npu_graph.gemm
// CHECK-NEXT:      npu_graph.add
// CHECK-NEXT:      npu_graph.relu
// Disabled: the gemm stays alone, the elementwise tail forms its own chain.
// NOMM-LABEL: func.func @gemm_bias_relu
// NOMM:         %g = npu_graph.gemm %a, %b
// NOMM-NEXT:    %r = npu_graph.fused(%g, %bias) {kernel = "bias", rule = "eltwise-chain"}
// NOCONV-LABEL: func.func @gemm_bias_relu
// NOCONV:         rule = "matmul-epilogue"
func.func @gemm_bias_relu(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %bias: tensor<6xf32>) -> tensor<4x6xf32> {
  %g = npu_graph.gemm %a, %b : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32> loc("fc")
  %s = npu_graph.add %g, %bias : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32> loc("bias")
  %r = npu_graph.relu %s : (tensor<4x6xf32>) -> tensor<4x6xf32> loc("act")
  func.return %r : tensor<4x6xf32>
}

// -----

// matmul-epilogue also anchors on npu_graph.matmul.
// CHECK-LABEL: func.func @matmul_relu
// CHECK:         npu_graph.fused(%a, %b) {kernel = "mm", rule = "matmul-epilogue"}
// NOMM-LABEL: func.func @matmul_relu
// NOMM:         %m = npu_graph.matmul %a, %b
// NOMM-NEXT:    %r = npu_graph.relu %m
func.func @matmul_relu(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %m = npu_graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32> loc("mm")
  %r = npu_graph.relu %m : (tensor<4x6xf32>) -> tensor<4x6xf32> loc("act")
  func.return %r : tensor<4x6xf32>
}

// -----

// eltwise-chain: elementwise ops with no cube op in front. Without locations
// the kernel is named after the first op.
// CHECK-LABEL: func.func @eltwise_chain
// CHECK:         %r = npu_graph.fused(%x, %y) {kernel = "npu_graph.add", rule = "eltwise-chain"}
// CHECK-NEXT:    ^bb0(%0: tensor<4x6xf32>, %1: tensor<4x6xf32>):
// CHECK-NEXT:      %a = npu_graph.add %0, %1
// CHECK-NEXT:      %m = npu_graph.mul %a, %1
// CHECK-NEXT:      %r_1 = npu_graph.relu %m
// NOELT-LABEL: func.func @eltwise_chain
// NOELT:         %a = npu_graph.add %x, %y
// NOELT-NEXT:    %m = npu_graph.mul %a, %y
// NOELT-NEXT:    %r = npu_graph.relu %m
func.func @eltwise_chain(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %a = npu_graph.add %x, %y : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %m = npu_graph.mul %a, %y : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %r = npu_graph.relu %m : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %r : tensor<4x6xf32>
}

// -----

// The conv result has a second user: the relu is not fused into it.
// CHECK-LABEL: func.func @conv_two_users
// CHECK-NOT:     npu_graph.fused
// CHECK:         %c = npu_graph.conv2d %x, %w
// CHECK-NEXT:    %r = npu_graph.relu %c
// CHECK-NEXT:    func.return %c, %r
func.func @conv_two_users(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %c = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %r = npu_graph.relu %c : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  func.return %c, %r : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

// The relu has two users: the chain ends there and the add stays outside.
// CHECK-LABEL: func.func @relu_two_users
// CHECK:         %r = npu_graph.fused(%x, %w) {kernel = "npu_graph.conv2d", rule = "conv-epilogue"}
// CHECK:           npu_graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %a = npu_graph.add %r, %y
// CHECK-NEXT:    func.return %r, %a
func.func @relu_two_users(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %y: tensor<1x4x6x6xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %c = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %r = npu_graph.relu %c : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %a = npu_graph.add %r, %y : (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  func.return %r, %a : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

// The add would broadcast the running value ([6] -> [4, 6]): not an epilogue.
// CHECK-LABEL: func.func @broadcast_running_value
// CHECK-NOT:     npu_graph.fused
// CHECK:         %r = npu_graph.relu %x
// CHECK-NEXT:    %a = npu_graph.add %r, %y
func.func @broadcast_running_value(%x: tensor<6xf32>, %y: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %r = npu_graph.relu %x : (tensor<6xf32>) -> tensor<6xf32>
  %a = npu_graph.add %r, %y : (tensor<6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %a : tensor<4x6xf32>
}

// -----

// Ops already inside a kernel are left alone.
// CHECK-LABEL: func.func @already_fused
// CHECK:         npu_graph.fused(%x) {kernel = "k", rule = "eltwise-chain"}
// CHECK-NEXT:    ^bb0(%i: tensor<4xf32>):
// CHECK-NEXT:      %a = npu_graph.relu %i
// CHECK-NEXT:      %b = npu_graph.relu %a
// CHECK-NEXT:      npu_graph.yield %b
func.func @already_fused(%x: tensor<4xf32>) -> tensor<4xf32> {
  %k = npu_graph.fused (%x) {kernel = "k", rule = "eltwise-chain"} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<4xf32>):
    %a = npu_graph.relu %i : (tensor<4xf32>) -> tensor<4xf32>
    %b = npu_graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
    npu_graph.yield %b : tensor<4xf32>
  }
  func.return %k : tensor<4xf32>
}
