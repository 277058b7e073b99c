// RUN: %opt %s --split-input-file --parsing-diagnostics | filecheck %s
// `kind` is a `KernelKind`: an unknown kind is reported while parsing.

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) cube {loops = ["m", "n"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    npu_tile.yield %a : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: Expected `matmul`, `conv2d`, `eltwise`, `pool`, `apply`, `view`, or `group`.

