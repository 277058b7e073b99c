// RUN: %opt %s --split-input-file --verify-diagnostics | filecheck %s
// One chunk per verifier error of npu_tile.kernel (an unknown kind or a malformed
// `loops` fails to parse: parse_errors.mlir).

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["m", "m"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    npu_tile.yield %a : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.kernel' k: loop names must be non-empty and unique, got ['m', 'm']

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["m", ""], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    npu_tile.yield %a : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.kernel' k: loop names must be non-empty and unique, got ['m', '']

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["m", "n"], tile = array<i64: 4>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    npu_tile.yield %a : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.kernel' k: 2 loops but 1 tile sizes and 2 trip counts

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["m", "n"], tile = array<i64: 4, 0>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    npu_tile.yield %a : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.kernel' k: tile sizes {{.*}} and trip counts {{.*}} must be positive

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["m", "n"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<8x4xf32>):
    npu_tile.yield %x : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.kernel' k: block argument types must match operands

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["m", "n"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_graph.reshape %a : (tensor<4x8xf32>) -> tensor<8x4xf32>
    npu_tile.yield %r : tensor<8x4xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.kernel' k: yielded types must match result types
