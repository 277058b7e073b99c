// RUN: %opt %s --split-input-file --verify-diagnostics -o /dev/null
// One chunk per verifier error of npu_graph, each expected at its op as mlir-opt's
// --verify-diagnostics checks it (a message elsewhere, or a missing one, is exit 1).

// constant: neither `weight` nor `value`.
// expected-error @+1 {{'npu_graph.constant' needs exactly one of 'weight' or 'value'}}
%0 = npu_graph.constant : tensor<4xf32>

// -----

// expected-error @+1 {{'npu_graph.constant': value shape [3] does not match the result type tensor<4xf32>}}
%0 = npu_graph.constant {value = dense<1.0> : tensor<3xf32>} : tensor<4xf32>

// -----

// constant: both `weight` and `value`.
// expected-error @+1 {{'npu_graph.constant' needs exactly one of 'weight' or 'value'}}
%0 = npu_graph.constant {weight = "w", value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>

// -----

func.func @f(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'npu_graph.conv2d': input and weight must be 4-D, got [3, 8, 8] and [4, 3, 3, 3]}}
  %0 = npu_graph.conv2d %x, %w : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'npu_graph.conv2d': pads needs 4 values, got [1, 1]}}
  %0 = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'npu_graph.conv2d': input has 3 channels but weight expects 2 x group 1}}
  %0 = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'npu_graph.conv2d': bias must have shape [4]}}
  %0 = npu_graph.conv2d %x, %w, %b : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// The result type does not match the inferred shape (no padding: 8 - 3 + 1 = 6).
func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'npu_graph.conv2d': convolution gives shape [1, 4, 6, 6], but the result type has [1, 4, 8, 8]}}
  %0 = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

// The kernel is larger than the input: no output at all.
func.func @f(%x: tensor<1x3x2x2xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'npu_graph.conv2d': convolution gives no valid shape, but the result type has [1, 4, 1, 1]}}
  %0 = npu_graph.conv2d %x, %w : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<4x6xf32>) {
  // expected-error-re @+1 {{'npu_graph.gemm': A and B must be 2-D, got {{.*}}}}
  %0 = npu_graph.gemm %a, %b : (tensor<4xf32>, tensor<4x6xf32>) -> tensor<1x6xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{'npu_graph.gemm': inner dimensions differ (8 vs 4)}}
  %0 = npu_graph.gemm %a, %b : (tensor<4x8xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %c: tensor<5xf32>) {
  // expected-error @+1 {{'npu_graph.gemm': C of shape [5] does not broadcast to [4, 6]}}
  %0 = npu_graph.gemm %a, %b, %c : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<5xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) {
  // expected-error @+1 {{'npu_graph.gemm': gemm gives shape [4, 6], but the result type has [6, 4]}}
  %0 = npu_graph.gemm %a, %b : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<6x4xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<7x6xf32>) {
  // expected-error @+1 {{'npu_graph.matmul': shapes [4, 8] and [7, 6] do not multiply}}
  %0 = npu_graph.matmul %a, %b : (tensor<4x8xf32>, tensor<7x6xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) {
  // expected-error @+1 {{'npu_graph.matmul': matmul gives shape [4, 6], but the result type has [4, 8]}}
  %0 = npu_graph.matmul %a, %b : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'npu_graph.relu': broadcasting the operands gives shape [4, 8], but the result type has [8, 4]}}
  %0 = npu_graph.relu %a : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

// Operands that do not broadcast at all.
func.func @f(%a: tensor<4x8xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'npu_graph.add': broadcasting the operands gives no valid shape, but the result type has [4, 8]}}
  %0 = npu_graph.add %a, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @f(%a: tensor<8x8xf32>) {
  // expected-error @+1 {{'npu_graph.maxpool': input must be 4-D NCHW, got shape [8, 8]}}
  %0 = npu_graph.maxpool %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<8x8xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

func.func @f(%a: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'npu_graph.maxpool': begin pads [2, 0] must be smaller than the kernel [2, 2]}}
  %0 = npu_graph.maxpool %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 0, 0, 0>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x5x4xf32>
  func.return
}

// -----

func.func @f(%a: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'npu_graph.maxpool': pooling gives shape [1, 1, 4, 4], but the result type has [1, 1, 8, 8]}}
  %0 = npu_graph.maxpool %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32>
  func.return
}

// -----

func.func @f(%a: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'npu_graph.reshape': [1, 1, 8, 8] and [1, 60] have different element counts}}
  %0 = npu_graph.reshape %a : (tensor<1x1x8x8xf32>) -> tensor<1x60xf32>
  func.return
}

// -----

// yield terminates a fused kernel only.
func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'npu_graph.yield' must be inside 'npu_graph.fused'}}
  npu_graph.yield %a : tensor<4xf32>
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error-re @+1 {{'npu_graph.fused': block argument types {{.*}} must match the operand types {{.*}}}}
  %0 = npu_graph.fused (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%i: tensor<8xf32>):
    npu_graph.yield %a : tensor<4xf32>
  }
  func.return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error-re @+1 {{'npu_graph.fused': yielded types {{.*}} must match the result types {{.*}}}}
  %0 = npu_graph.fused (%a) : (tensor<4xf32>) -> tensor<8xf32> {
  ^bb0(%i: tensor<4xf32>):
    npu_graph.yield %i : tensor<4xf32>
  }
  func.return
}

// -----

// Zero strides would divide by zero in shape inference: rejected first.
builtin.module {
  func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
    // expected-error @+1 {{'npu_graph.conv2d': strides must be positive, got [0, 1]}}
    %c = npu_graph.conv2d %x, %w {strides = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    func.return %c : tensor<1x4x6x6xf32>
  }
}

// -----

builtin.module {
  func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32> {
    // expected-error @+1 {{'npu_graph.conv2d': group 0 must be positive and divide the 6 output channels}}
    %c = npu_graph.conv2d %x, %w {group = 0 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
    func.return %c : tensor<1x6x6x6xf32>
  }
}

// -----

builtin.module {
  func.func @f(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32> {
    // expected-error @+1 {{'npu_graph.conv2d': group 2 must be positive and divide the 3 output channels}}
    %c = npu_graph.conv2d %x, %w {group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
    func.return %c : tensor<1x3x6x6xf32>
  }
}

// -----

builtin.module {
  func.func @f(%a: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
    // expected-error @+1 {{'npu_graph.maxpool': kernel needs 2 values, got [2]}}
    %p = npu_graph.maxpool %a {kernel = array<i64: 2>, strides = array<i64: 2, 2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
    func.return %p : tensor<1x1x4x4xf32>
  }
}

// -----

builtin.module {
  func.func @f(%a: tensor<4x4xi32>) -> tensor<4x4xf32> {
    // expected-error @+1 {{'npu_graph.relu': operand #0 has element type i32; this op takes f32, f16, bf16}}
    %r = npu_graph.relu %a : (tensor<4x4xi32>) -> tensor<4x4xf32>
    func.return %r : tensor<4x4xf32>
  }
}

// -----

builtin.module {
  func.func @f(%a: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
    // expected-error @+1 {{expected an integer array such as array<i64: 1, 2>, got array<f32: 2.000000e+00, 2.000000e+00>}}
    %p = npu_graph.maxpool %a {kernel = array<f32: 2.0, 2.0>, strides = array<i64: 2, 2>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
    func.return %p : tensor<1x1x4x4xf32>
  }
}

// -----

// Three-operand elementwise ops broadcast all their operands.
func.func @f(%x: tensor<4x8xf32>, %lo: tensor<3xf32>, %hi: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.clip': broadcasting the operands gives no valid shape, but the result type has [4, 8]}}
  %0 = npu_graph.clip %x, %lo, %hi : (tensor<4x8xf32>, tensor<3xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @f(%c: tensor<4x1xf32>, %a: tensor<8xf32>, %b: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.where': broadcasting the operands gives shape [4, 8], but the result type has [8]}}
  %0 = npu_graph.where %c, %a, %b : (tensor<4x1xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5x3xf32>) {
  // expected-error @+1 {{'npu_graph.expand': broadcasting [5, 3] to [2, 5, 4] gives no valid shape, but the result type has [2, 5, 4]}}
  %0 = npu_graph.expand %x : (tensor<5x3xf32>) -> tensor<2x5x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'npu_graph.layernorm': axis 3 is out of range for rank 3}}
  %0 = npu_graph.layernorm %x, %s {axis = 3 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3x8xf32>, %s: tensor<3x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'npu_graph.layernorm': bias of shape [4] does not broadcast to the normalised dims [3, 8]}}
  %0 = npu_graph.layernorm %x, %s, %b {axis = 1 : i64} : (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<4xf32>) -> tensor<2x3x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3x8xf32>) {
  // expected-error @+1 {{'npu_graph.reduce_mean': axes [2, 0] must be sorted, unique and in 0..2}}
  %0 = npu_graph.reduce_mean %x {axes = array<i64: 2, 0>, keepdims = true} : (tensor<2x3x8xf32>) -> tensor<1x3x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3x8xf32>) {
  // expected-error @+1 {{'npu_graph.reduce_sum': reducing gives shape [2, 8], but the result type has [2, 1, 8]}}
  %0 = npu_graph.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x8xf32>) -> tensor<2x1x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x0xf32>) {
  // expected-error @+1 {{'npu_graph.reduce_max': cannot reduce the empty dims of [2, 0]}}
  %0 = npu_graph.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x0xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{'npu_graph.concat': operand #1 of shape [3, 3] does not match [2, 3] outside axis 1}}
  %0 = npu_graph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+1 {{'npu_graph.concat': axis -3 is out of range for rank 2}}
  %0 = npu_graph.concat %a, %b {axis = -3 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'npu_graph.slice': starts, ends and steps need 2 values (the rank), got [0], [4], [1]}}
  %0 = npu_graph.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'npu_graph.slice': step of dim 1 is 0}}
  %0 = npu_graph.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 4, 8>, steps = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'npu_graph.slice': start 8 / end -1 of dim 1 are out of range for size 8 and step -1}}
  %0 = npu_graph.slice %x {starts = array<i64: 0, 8>, ends = array<i64: 4, -1>, steps = array<i64: 1, -1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'npu_graph.slice': slicing gives shape [2, 3], but the result type has [2, 2]}}
  %0 = npu_graph.slice %x {starts = array<i64: 1, 7>, ends = array<i64: 4, -1>, steps = array<i64: 2, -3>} : (tensor<4x8xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<f32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'npu_graph.gather': data must have rank >= 1}}
  %0 = npu_graph.gather %x, %i {axis = 0 : i64} : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<10x4xf32>, %i: tensor<2x3xf32>) {
  // expected-error @+1 {{'npu_graph.gather': gathering gives shape [10, 2, 3], but the result type has [2, 3, 4]}}
  %0 = npu_graph.gather %x, %i {axis = 1 : i64} : (tensor<10x4xf32>, tensor<2x3xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'npu_graph.trilu': input must have rank >= 2, got [8]}}
  %0 = npu_graph.trilu %x {upper = true, k = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'npu_graph.lrn': input must be [N, C, ...] with rank >= 3, got [4, 8]}}
  %0 = npu_graph.lrn %x {size = 3 : i64, alpha = 1.0e-04 : f32, beta = 7.5e-01 : f32, bias = 1.0 : f32} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'npu_graph.lrn': size must be positive, got 0}}
  %0 = npu_graph.lrn %x {size = 0 : i64, alpha = 1.0e-04 : f32, beta = 7.5e-01 : f32, bias = 1.0 : f32} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{'npu_graph.avgpool': pads needs 4 values, got [1, 1]}}
  %0 = npu_graph.avgpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{'npu_graph.sumpool': pooling gives shape [1, 2, 4, 4], but the result type has [1, 2, 8, 8]}}
  %0 = npu_graph.sumpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{'npu_graph.avgpool': pooling gives shape [1, 2, 4, 4], but the result type has [1, 2, 3, 3]}}
  %0 = npu_graph.avgpool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = true} : (tensor<1x2x8x8xf32>) -> tensor<1x2x3x3xf32>
  func.return
}

// -----

// End padding may exceed the kernel (ceil mode), but no window may start in it.
func.func @f(%a: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'npu_graph.maxpool': pads [0, 0, 2, 0]: the last window of spatial dim 0 starts in the end padding}}
  %0 = npu_graph.maxpool %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 2, 0>} : (tensor<1x1x8x8xf32>) -> tensor<1x1x5x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x6x5x5xf32>) {
  // expected-error @+1 {{'npu_graph.maxpool_nd': input must be [N, C] and 2 spatial dims for a 2-D kernel, got shape [1, 2, 6, 5, 5]}}
  %0 = npu_graph.maxpool_nd %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x6x5x5xf32>) -> tensor<1x2x2x2x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x6x5x5xf32>) {
  // expected-error @+1 {{'npu_graph.maxpool_nd': strides needs 3 values, got [2, 2]}}
  %0 = npu_graph.maxpool_nd %x {kernel = array<i64: 3, 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>} : (tensor<1x2x6x5x5xf32>) -> tensor<1x2x2x2x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x6x5x5xf32>) {
  // expected-error @+1 {{'npu_graph.maxpool_nd': begin pads [0, 3, 0] must be smaller than the kernel [3, 3, 3]}}
  %0 = npu_graph.maxpool_nd %x {kernel = array<i64: 3, 3, 3>, strides = array<i64: 2, 2, 2>, pads = array<i64: 0, 3, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>} : (tensor<1x2x6x5x5xf32>) -> tensor<1x2x2x4x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x6x5x5xf32>) {
  // expected-error @+1 {{'npu_graph.maxpool_nd': pooling gives shape [1, 2, 2, 2, 2], but the result type has [1, 2, 3, 2, 2]}}
  %0 = npu_graph.maxpool_nd %x {kernel = array<i64: 3, 3, 3>, strides = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>} : (tensor<1x2x6x5x5xf32>) -> tensor<1x2x3x2x2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3x9xf32>) {
  // expected-error @+1 {{'npu_graph.avgpool': strides must be positive, got [0]}}
  %0 = npu_graph.avgpool %x {kernel = array<i64: 3>, strides = array<i64: 0>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, count_include_pad = false} : (tensor<2x3x9xf32>) -> tensor<2x3x7xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3x9xf32>) {
  // expected-error @+1 {{'npu_graph.avgpool': pads must be non-negative, got [0, -1]}}
  %0 = npu_graph.avgpool %x {kernel = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 0, -1>, dilations = array<i64: 1>, count_include_pad = false} : (tensor<2x3x9xf32>) -> tensor<2x3x6xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x3x9xf32>) {
  // expected-error @+1 {{'npu_graph.avgpool': kernel needs at least one value}}
  %0 = npu_graph.avgpool %x {kernel = array<i64>, strides = array<i64>, pads = array<i64>, dilations = array<i64>, count_include_pad = false} : (tensor<2x3x9xf32>) -> tensor<2x3x9xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'npu_graph.pad': pads needs 4 values (begin and end per dim), got [1, 1]}}
  %0 = npu_graph.pad %x {pads = array<i64: 1, 1>, value = 0.0 : f32} : (tensor<4x8xf32>) -> tensor<6x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'npu_graph.pad': pads [-3, 0, -2, 0] crop more than the input [4, 8]}}
  %0 = npu_graph.pad %x {pads = array<i64: -3, 0, -2, 0>, value = 0.0 : f32} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  func.return
}

// -----

// Graph ops take ONNX pads: never negative (only compute ops crop).
builtin.module {
  func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x6xf32> {
    // expected-error @+1 {{'npu_graph.conv2d': pads must be non-negative, got [-1, 0, -1, 0]}}
    %0 = npu_graph.conv2d %x, %w {pads = array<i64: -1, 0, -1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x6xf32>
    func.return %0 : tensor<1x4x4x6xf32>
  }
}

// -----

// conv_transpose: output_padding must stay below the stride (or the dilation).
func.func @f(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'npu_graph.conv_transpose': output_padding [2, 0] must have 2 values, each below its stride or dilation}}
  %0 = npu_graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 2, 0>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x13x11xf32>
  func.return
}

// -----

// conv_transpose: the weight's first dim is the input channels.
func.func @f(%x: tensor<1x4x5x5xf32>, %w: tensor<3x4x3x3xf32>) {
  // expected-error @+1 {{'npu_graph.conv_transpose': weight [3, 4, 3, 3] must have the input's 4 channels first, a multiple of group 1}}
  %0 = npu_graph.conv_transpose %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<3x4x3x3xf32>) -> tensor<1x4x7x7xf32>
  func.return
}

// -----

// conv_transpose: the result type must be s * (in - 1) + output_padding + (k - 1) * d + 1 - pads.
func.func @f(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x4x4xf32>) {
  // expected-error @+1 {{'npu_graph.conv_transpose': transposed convolution gives shape [1, 3, 10, 10], but the result type has [1, 3, 12, 12]}}
  %0 = npu_graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x4x4xf32>) -> tensor<1x3x12x12xf32>
  func.return
}

// -----

// conv_transpose: the bias has one value per output channel (group x weight dim 1).
func.func @f(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'npu_graph.conv_transpose': bias must have shape [6]}}
  %0 = npu_graph.conv_transpose %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x6x7x7xf32>
  func.return
}

// -----

// attention: kt must be [..., D, T] for q [..., S, D] (here D = 8 but kt has 4 rows).
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x4x8xf32>, %v: tensor<2x8x8xf32>) {
  // expected-error @+1 {{'npu_graph.attention': q [2, 4, 8], kt [2, 4, 8] and v [2, 8, 8] must be [..., S, D], [..., D, T] and [..., T, Dv] with the same leading dims}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// attention: the mask must broadcast to the scores [..., S, T].
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %m: tensor<1x4x5xf32>) {
  // expected-error @+1 {{'npu_graph.attention': mask [1, 4, 5] does not broadcast to the scores [2, 4, 6]}}
  %0 = npu_graph.attention %q, %kt, %v, %m {scale = 1.0 : f32} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x8xf32>, tensor<1x4x5xf32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// attention: a causal mask is two operands, the rows' limits and the keys' positions.
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %m: tensor<4x1xf32>) {
  // expected-error @+1 {{'npu_graph.attention': 1 mask operands: expected 2 (qlim, kpos) with causal}}
  %0 = npu_graph.attention %q, %kt, %v, %m {scale = 1.0 : f32, causal = -3.0e+38 : f32} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x8xf32>, tensor<4x1xf32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// attention: without causal, at most one (additive) mask.
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %m: tensor<4x1xf32>, %k: tensor<1x6xf32>) {
  // expected-error @+1 {{'npu_graph.attention': 2 mask operands: expected at most one}}
  %0 = npu_graph.attention %q, %kt, %v, %m, %k {scale = 1.0 : f32} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x8xf32>, tensor<4x1xf32>, tensor<1x6xf32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// attention: the keys' positions broadcast to [..., 1, T].
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>, %m: tensor<4x1xf32>, %k: tensor<4x6xf32>) {
  // expected-error @+1 {{'npu_graph.attention': kpos [4, 6] does not broadcast to the positions [2, 1, 6]}}
  %0 = npu_graph.attention %q, %kt, %v, %m, %k {scale = 1.0 : f32, causal = -3.0e+38 : f32} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x8xf32>, tensor<4x1xf32>, tensor<4x6xf32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// attention: a quantized one (`quant`) reads and writes i8/ui8, not floats.
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) {
  // expected-error @+1 {{'npu_graph.attention': q has element type f32; it must be i8 or ui8}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, quant = array<f32: 0.0, 0.0, 0.0, 1.0, 0.0, -128.0, 127.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, -128.0, 127.0, 1.0, 0.0, -128.0, 127.0, 0.0, 0.0>} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// attention: `quant` has one value per field of AttentionOp.QUANT_FIELDS.
func.func @f(%q: tensor<2x4x8xi8>, %kt: tensor<2x8x6xi8>, %v: tensor<2x6x8xi8>) {
  // expected-error @+1 {{'npu_graph.attention': quant has 2 values, expected 23 (zq, zk, zv, m1, z1, lo1, hi1, s1, z1t, s2, z2, lo2, hi2, s3, z3, lo3, hi3, m2, z4, lo4, hi4, fixed, div)}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, quant = array<f32: 1.0, 2.0>} : (tensor<2x4x8xi8>, tensor<2x8x6xi8>, tensor<2x6x8xi8>) -> tensor<2x4x8xi8>
  func.return
}

// -----

// attention: the probabilities' scale s3 must be positive.
func.func @f(%q: tensor<2x4x8xi8>, %kt: tensor<2x8x6xi8>, %v: tensor<2x6x8xi8>) {
  // expected-error @+1 {{'npu_graph.attention': quant s3 must be positive (scales, multipliers) or integral (zero points, ranges)}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, quant = array<f32: 0.0, 0.0, 0.0, 1.0, 0.0, -128.0, 127.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -128.0, 127.0, 1.0, 0.0, -128.0, 127.0, 0.0, 0.0>} : (tensor<2x4x8xi8>, tensor<2x8x6xi8>, tensor<2x6x8xi8>) -> tensor<2x4x8xi8>
  func.return
}

// -----

// attention: a score table belongs to a quantized attention.
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) {
  // expected-error @+1 {{'npu_graph.attention': score_table needs quant}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, score_table = array<i64: 1, 2>} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// attention: its table has 256 entries, one per 8-bit code.
func.func @f(%q: tensor<2x4x8xi8>, %kt: tensor<2x8x6xi8>, %v: tensor<2x6x8xi8>) {
  // expected-error @+1 {{'npu_graph.attention': score_table has 2 entries, expected 256}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, quant = array<f32: 0.0, 0.0, 0.0, 1.0, 0.0, -128.0, 127.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, -128.0, 127.0, 1.0, 0.0, -128.0, 127.0, 0.0, 0.0>, score_table = array<i64: 1, 2>} : (tensor<2x4x8xi8>, tensor<2x8x6xi8>, tensor<2x6x8xi8>) -> tensor<2x4x8xi8>
  func.return
}

// -----

// attention: a quantized one takes its keys whole (its probabilities round before @ v).
func.func @f(%q: tensor<2x4x8xi8>, %kt: tensor<2x8x6xi8>, %v: tensor<2x6x8xi8>) {
  // expected-error @+1 {{'npu_graph.attention': a quantized attention takes its keys whole (no online state)}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, quant = array<f32: 0.0, 0.0, 0.0, 1.0, 0.0, -128.0, 127.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, -128.0, 127.0, 1.0, 0.0, -128.0, 127.0, 0.0, 0.0>, online} : (tensor<2x4x8xi8>, tensor<2x8x6xi8>, tensor<2x6x8xi8>) -> tensor<2x4x10xi8>
  func.return
}

// -----

// attention: the result is [..., S, Dv].
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x16xf32>) {
  // expected-error @+1 {{'npu_graph.attention': attention gives shape [2, 4, 16], but the result type has [2, 4, 8]}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x16xf32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// attention, online (a key block's state): the result is [..., S, Dv + 2], the
// output columns then the row max and sum.
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x16xf32>) {
  // expected-error @+1 {{'npu_graph.attention': attention gives shape [2, 4, 18], but the result type has [2, 4, 16]}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, online} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x16xf32>) -> tensor<2x4x16xf32>
  func.return
}

// -----

// attention with key_rows: the keys come as k [..., T, D] (here [2, 8, 6] is kt's shape).
func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x8x6xf32>, %v: tensor<2x6x16xf32>) {
  // expected-error @+1 {{'npu_graph.attention': q [2, 4, 8], kt [2, 8, 6] and v [2, 6, 16] must be [..., S, D], k [..., T, D] and [..., T, Dv] with the same leading dims}}
  %0 = npu_graph.attention %q, %k, %v {scale = 1.0 : f32, key_rows} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x16xf32>) -> tensor<2x4x16xf32>
  func.return
}

// -----

// attention, bshd: [B, S, H, D] layouts need rank-4 tensors.
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x16xf32>) {
  // expected-error @+1 {{'npu_graph.attention': bshd layouts need rank-4 q, k and v}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, bshd = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x16xf32>) -> tensor<2x4x16xf32>
  func.return
}

// -----

// attention, bshd: k [B, T, H, D] in place is read by rows, so it needs key_rows.
func.func @f(%q: tensor<1x2x4x8xf32>, %k: tensor<1x6x2x8xf32>, %v: tensor<1x2x6x8xf32>) {
  // expected-error @+1 {{'npu_graph.attention': bshd k (1) needs key_rows: k [B, T, H, D]}}
  %0 = npu_graph.attention %q, %k, %v {scale = 1.0 : f32, bshd = array<i64: 1>} : (tensor<1x2x4x8xf32>, tensor<1x6x2x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

// attention, bshd: only 0 (q), 1 (k), 2 (v) and 3 (result) name tensors.
func.func @f(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x6xf32>, %v: tensor<1x2x6x8xf32>) {
  // expected-error @+1 {{'npu_graph.attention': bshd [4] must name distinct tensors among 0 (q), 1 (k), 2 (v) and 3 (result)}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, bshd = array<i64: 4>} : (tensor<1x2x4x8xf32>, tensor<1x2x8x6xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

// attention, bshd: the result [B, S, H, Dv] (3) - here it is given heads first.
func.func @f(%q: tensor<1x4x2x8xf32>, %kt: tensor<1x2x8x6xf32>, %v: tensor<1x2x6x8xf32>) {
  // expected-error @+1 {{'npu_graph.attention': attention gives shape [1, 4, 2, 8], but the result type has [1, 2, 4, 8]}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, bshd = array<i64: 0, 3>} : (tensor<1x4x2x8xf32>, tensor<1x2x8x6xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

// attention, head_window: the heads read must exist in each operand (v has 4, heads 4..5 are read).
func.func @f(%x: tensor<1x8x6x16xf32>, %v: tensor<1x8x4x16xf32>) {
  // expected-error @+1 {{'npu_graph.attention': head_window reads heads 4..5 of v, which has 4}}
  %0 = npu_graph.attention %x, %x, %v {scale = 1.0 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>, head_window = array<i64: 0, 2, 4, 2>} : (tensor<1x8x6x16xf32>, tensor<1x8x6x16xf32>, tensor<1x8x4x16xf32>) -> tensor<1x8x2x16xf32>
  func.return
}

// -----

// attention, head_window: [oq, ok, ov, H].
func.func @f(%x: tensor<1x8x6x16xf32>) {
  // expected-error @+1 {{'npu_graph.attention': head_window [0, 2] must be [oq, ok, ov, H] with H >= 1 on q, k and v of rank >= 3}}
  %0 = npu_graph.attention %x, %x, %x {scale = 1.0 : f32, key_rows, bshd = array<i64: 0, 1, 2, 3>, head_window = array<i64: 0, 2>} : (tensor<1x8x6x16xf32>, tensor<1x8x6x16xf32>, tensor<1x8x6x16xf32>) -> tensor<1x8x2x16xf32>
  func.return
}

// -----

// attention, finish: the normalisation of an online state's last merge; a plain
// attention has no state to finish.
func.func @f(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x16xf32>) {
  // expected-error @+1 {{'npu_graph.attention': finish merges an online state: it needs online}}
  %0 = npu_graph.attention %q, %kt, %v {scale = 1.0 : f32, finish} : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x16xf32>) -> tensor<2x4x16xf32>
  func.return
}

// -----

// Element types: a float op computes in one float type.
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'npu_graph.add': operand #1 is f16 but operand #0 is f32; this op computes in one element type (insert a cast)}}
  %0 = npu_graph.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----

// Data movement takes any one type, but not two.
func.func @f(%a: tensor<4xi8>, %b: tensor<4xui8>) {
  // expected-error @+1 {{'npu_graph.concat': operand #1 is ui8 but operand #0 is i8; this op computes in one element type (insert a cast)}}
  %0 = npu_graph.concat %a, %b {axis = 0 : i64} : (tensor<4xi8>, tensor<4xui8>) -> tensor<8xi8>
  func.return
}

// -----

func.func @f(%a: tensor<4x2xi8>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'npu_graph.gather': result is f32 but data is i8; gathering keeps the element type}}
  %0 = npu_graph.gather %a, %i {axis = 0 : i64} : (tensor<4x2xi8>, tensor<3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

func.func @f(%a: tensor<4xi8>) {
  // expected-error @+1 {{'npu_graph.constant': value of element type f32 does not match the result type tensor<4xi8>}}
  %0 = npu_graph.constant {value = dense<1.0> : tensor<4xf32>} : tensor<4xi8>
  func.return
}

// -----

// quantize: float in, i8/ui8 out, f32 parameters broadcasting to the input.
func.func @f(%x: tensor<2x4xi8>, %s: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.quantize': operand #0 has element type i8; it must be f32 or f16 or bf16}}
  %0 = npu_graph.quantize %x, %s, %z : (tensor<2x4xi8>, tensor<f32>, tensor<f32>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %s: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.quantize': result has element type i32; it must be i8 or ui8}}
  %0 = npu_graph.quantize %x, %s, %z : (tensor<2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x4xi32>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %s: tensor<3xf32>, %z: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.quantize': scale of shape [3] does not broadcast to the input's [2, 4]}}
  %0 = npu_graph.quantize %x, %s, %z : (tensor<2x4xf32>, tensor<3xf32>, tensor<f32>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %s: tensor<f32>, %z: tensor<i8>) {
  // expected-error @+1 {{'npu_graph.quantize': zero_point (operand #2) has element type i8; it must be f32}}
  %0 = npu_graph.quantize %x, %s, %z : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xf32>, %s: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.quantize': min 0 / max 300 must satisfy 0 <= min <= max <= 255 (ui8)}}
  %0 = npu_graph.quantize %x, %s, %z {min = 0 : i64, max = 300 : i64} : (tensor<2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x4xui8>
  func.return
}

// -----

// dequantize: i8/ui8/i32 in, float out.
func.func @f(%x: tensor<2x4xf32>, %s: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.dequantize': operand #0 has element type f32; it must be i8 or ui8 or i32}}
  %0 = npu_graph.dequantize %x, %s, %z : (tensor<2x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xi8>, %s: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.dequantize': result shape [2, 3] must be the input's [2, 4]}}
  %0 = npu_graph.dequantize %x, %s, %z : (tensor<2x4xi8>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  func.return
}

// -----

// requantize: i32 in, i8/ui8 out, mode float or fixed.
func.func @f(%x: tensor<2x4xi8>, %m: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.requantize': operand #0 has element type i8; it must be i32}}
  %0 = npu_graph.requantize %x, %m, %z : (tensor<2x4xi8>, tensor<f32>, tensor<f32>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xi32>, %m: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.requantize': mode 'double' must be one of float, fixed}}
  %0 = npu_graph.requantize %x, %m, %z {mode = "double"} : (tensor<2x4xi32>, tensor<f32>, tensor<f32>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xi32>, %m: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'npu_graph.requantize': min 10 / max 5 must satisfy -128 <= min <= max <= 127 (i8)}}
  %0 = npu_graph.requantize %x, %m, %z {min = 10 : i64, max = 5 : i64} : (tensor<2x4xi32>, tensor<f32>, tensor<f32>) -> tensor<2x4xi8>
  func.return
}

// -----

// cast: between float types only.
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'npu_graph.cast': result has element type i8; it must be f32 or f16 or bf16}}
  %0 = npu_graph.cast %x : (tensor<4xf32>) -> tensor<4xi8>
  func.return
}

// -----

// Integer conv2d/matmul: i8/ui8 operands, i32 bias and result, zero points in range.
func.func @f(%x: tensor<1x3x8x8xi8>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'npu_graph.conv2d': weight has element type f32; it must be i8 or ui8}}
  %0 = npu_graph.conv2d %x, %w : (tensor<1x3x8x8xi8>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xi32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x8x8xui8>, %w: tensor<4x3x3x3xi8>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'npu_graph.conv2d': bias has element type f32; it must be i32}}
  %0 = npu_graph.conv2d %x, %w, %b : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xi8>, tensor<4xf32>) -> tensor<1x4x6x6xi32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x8x8xui8>, %w: tensor<4x3x3x3xi8>) {
  // expected-error @+1 {{'npu_graph.conv2d': input_zero_point -3 is outside ui8 [0, 255]}}
  %0 = npu_graph.conv2d %x, %w {input_zero_point = -3 : i64} : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xi8>) -> tensor<1x4x6x6xi32>
  func.return
}

// -----

func.func @f(%a: tensor<4x8xi8>, %b: tensor<8x2xi8>) {
  // expected-error @+1 {{'npu_graph.matmul': result has element type i8; it must be i32}}
  %0 = npu_graph.matmul %a, %b : (tensor<4x8xi8>, tensor<8x2xi8>) -> tensor<4x2xi8>
  func.return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{'npu_graph.matmul': weight_zero_point only applies to integer (i8/ui8) operands}}
  %0 = npu_graph.matmul %a, %b {weight_zero_point = 3 : i64} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

// table: an 8-bit input, a [256] table (or [C, 256] with `axis` naming a dim of size C),
// the result of the table's type and the input's shape.
func.func @f(%x: tensor<2x4xi32>, %t: tensor<256xi8>) {
  // expected-error @+1 {{'npu_graph.table': input has element type i32; it must be i8 or ui8}}
  %0 = npu_graph.table %x, %t : (tensor<2x4xi32>, tensor<256xi8>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xi8>, %t: tensor<256xi8>) {
  // expected-error @+1 {{'npu_graph.table': result element type ui8 must be the table's i8}}
  %0 = npu_graph.table %x, %t : (tensor<2x4xi8>, tensor<256xi8>) -> tensor<2x4xui8>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xi8>, %t: tensor<128xi8>) {
  // expected-error @+1 {{'npu_graph.table': a table without `axis` has shape [256], got [128]}}
  %0 = npu_graph.table %x, %t : (tensor<2x4xi8>, tensor<128xi8>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xi8>, %t: tensor<2x256xi8>) {
  // expected-error @+1 {{'npu_graph.table': axis 1 needs a table of shape [input dim 1, 256] = [4, 256], got [2, 256]}}
  %0 = npu_graph.table %x, %t {axis = 1 : i64} : (tensor<2x4xi8>, tensor<2x256xi8>) -> tensor<2x4xi8>
  func.return
}

// -----

// qadd: two 8-bit operands, an 8-bit result of a's shape (b broadcasts to it), per-tensor
// parameters: positive finite scales, integral zero points within their tensor's type.
func.func @f(%a: tensor<2x4xf32>, %b: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.qadd': operand a has element type f32; it must be i8 or ui8}}
  %0 = npu_graph.qadd %a, %b {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.0 : f32} : (tensor<2x4xf32>, tensor<2x4xi8>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%a: tensor<2x4xi8>, %b: tensor<2x4xi32>) {
  // expected-error @+1 {{'npu_graph.qadd': operand b has element type i32; it must be i8 or ui8}}
  %0 = npu_graph.qadd %a, %b {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.0 : f32} : (tensor<2x4xi8>, tensor<2x4xi32>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%a: tensor<1x4xi8>, %b: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.qadd': operand b of shape [2, 4] does not broadcast to a's [1, 4]}}
  %0 = npu_graph.qadd %a, %b {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.0 : f32} : (tensor<1x4xi8>, tensor<2x4xi8>) -> tensor<1x4xi8>
  func.return
}

// -----

func.func @f(%a: tensor<2x4xi8>, %b: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.qadd': b_scale = 0.0 must be a positive finite scale}}
  %0 = npu_graph.qadd %a, %b {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.0 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.0 : f32} : (tensor<2x4xi8>, tensor<2x4xi8>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%a: tensor<2x4xi8>, %b: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.qadd': zero_point = 0.5 must be an integral zero point}}
  %0 = npu_graph.qadd %a, %b {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.5 : f32} : (tensor<2x4xi8>, tensor<2x4xi8>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%a: tensor<2x4xui8>, %b: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.qadd': a_zero_point = -1 outside ui8's [0, 255]}}
  %0 = npu_graph.qadd %a, %b {a_scale = 0.25 : f32, a_zero_point = -1.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.0 : f32} : (tensor<2x4xui8>, tensor<2x4xi8>) -> tensor<2x4xi8>
  func.return
}

// -----

func.func @f(%a: tensor<2x4xi8>, %b: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.qadd': mode 'double' must be one of float, fixed}}
  %0 = npu_graph.qadd %a, %b {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.0 : f32, mode = "double"} : (tensor<2x4xi8>, tensor<2x4xi8>) -> tensor<2x4xi8>
  func.return
}

// -----

// qmul: the same operands, attributes and checks as qadd.
func.func @f(%a: tensor<1x4xi8>, %b: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.qmul': operand b of shape [2, 4] does not broadcast to a's [1, 4]}}
  %0 = npu_graph.qmul %a, %b {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0.5 : f32, zero_point = 0.0 : f32} : (tensor<1x4xi8>, tensor<2x4xi8>) -> tensor<1x4xi8>
  func.return
}

// -----

func.func @f(%a: tensor<2x4xi8>, %b: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.qmul': scale = nan must be a positive finite scale}}
  %0 = npu_graph.qmul %a, %b {a_scale = 0.25 : f32, a_zero_point = 0.0 : f32, b_scale = 0.5 : f32, b_zero_point = 0.0 : f32, scale = 0x7FC00000 : f32, zero_point = 0.0 : f32} : (tensor<2x4xi8>, tensor<2x4xi8>) -> tensor<2x4xi8>
  func.return
}

// -----

// A widening sum: a mean or sum of f16/bf16 values into an f32 result verifies (what
// npu-convert-precision keeps in f32); a max may not widen, nor a mean narrow.
func.func @f(%x: tensor<2x4xf16>, %y: tensor<2x4xbf16>) {
  %0 = npu_graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf16>) -> tensor<2x1xf32>
  %1 = npu_graph.reduce_sum %y {axes = array<i64: 1>, keepdims = false} : (tensor<2x4xbf16>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xf16>) {
  // expected-error @+1 {{'npu_graph.reduce_max': result #0 is f32 but operand #0 is f16; this op computes in one element type (insert a cast)}}
  %0 = npu_graph.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf16>) -> tensor<2x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'npu_graph.reduce_mean': result #0 is f16 but operand #0 is f32; this op computes in one element type (insert a cast)}}
  %0 = npu_graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf32>) -> tensor<2x1xf16>
  func.return
}

// -----

// A reduction with a dequantizing input (input_scale, input_zero_point): an i8/ui8
// input, an f32 result, a positive finite scale, an integral zero point in the type.
func.func @f(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'npu_graph.reduce_mean': input has element type f32; it must be i8 or ui8}}
  %0 = npu_graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true, input_scale = 0.5 : f32, input_zero_point = 0.0 : f32} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.reduce_sum': result has element type i8; it must be f32}}
  %0 = npu_graph.reduce_sum %x {axes = array<i64: 1>, keepdims = true, input_scale = 0.5 : f32, input_zero_point = 0.0 : f32} : (tensor<2x4xi8>) -> tensor<2x1xi8>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xui8>) {
  // expected-error @+1 {{'npu_graph.reduce_mean': input_zero_point = -1 must be an integer in ui8's [0, 255]}}
  %0 = npu_graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true, input_scale = 0.5 : f32, input_zero_point = -1.0 : f32} : (tensor<2x4xui8>) -> tensor<2x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.reduce_mean': input_scale = 0 must be a positive finite scale}}
  %0 = npu_graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true, input_scale = 0.0 : f32, input_zero_point = 0.0 : f32} : (tensor<2x4xi8>) -> tensor<2x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<2x4xi8>) {
  // expected-error @+1 {{'npu_graph.reduce_mean': input_zero_point = nan must be an integer in i8's [-128, 127]}}
  %0 = npu_graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true, input_scale = 0.5 : f32} : (tensor<2x4xi8>) -> tensor<2x1xf32>
  func.return
}
