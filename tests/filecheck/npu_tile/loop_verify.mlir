// RUN: %opt %s --split-input-file --verify-diagnostics | filecheck %s
// One chunk per verifier error of npu_tile.loop, npu_tile.load and npu_tile.store.

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.loop': 2 loops need 2 tile sizes and trip counts

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 3 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.loop': reductions must be between 0 and the number of loops

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index):
      %t = npu_tile.load %a(%i)[4 * %i, 8] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i)[4 * %i, 0] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.loop': the body takes one index per loop (2)

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      npu_tile.store %t(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.loop': the body must hold exactly one 'npu_tile.reduce'

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8, 1] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8x1xf32> -> tensor<4x8x1xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j, 0] sizes [4, 8, 1] : tensor<4x8x1xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.load': a window of rank 3 over 2 loops needs 3 view dims, 3 consts and 6 coefs

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] view [2, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.load': view [2, 8] does not have the elements of tensor<4x8xf32>

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%j, %i)[4 * %j, 8 * %i] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.load' must be in an 'npu_tile.loop' or 'npu_tile.strip_loop' and take its tile indices

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d0"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.loop': loop names must be non-empty and unique, got ['d0', 'd0']

// -----

// A layer group (no loops) loads its inputs whole: a part of one is an error.
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "g"(%x) group {loops = [], tile = array<i64>, grid = array<i64>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %t = npu_tile.load %a()[0, 4] sizes [4, 4] : tensor<4x8xf32>
    %r = npu_graph.relu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.load' in a layer group loads its source whole (no loops)

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t {combine = "max"} : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.reduce': combine must be one of sum, online_softmax, row_stats, got 'max'

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t {combine = "online_softmax"} : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.reduce': an online_softmax combine takes an `online` op's states

// -----

// reduce: an init tile has the result's type.
func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x, %y) matmul {loops = ["m", "n", "k"], tile = array<i64: 4, 8, 4>, grid = array<i64: 1, 1, 2>} : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x4xf32>):
    %r = npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 4, 8, 4>, grid = array<i64: 1, 1, 2>, reductions = 1 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index, %k: index):
      %t = npu_tile.load %a(%i, %j, %k)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %u = npu_tile.load %b(%i, %j, %k)[0, 0] sizes [4, 4] : tensor<4x4xf32>
      %s = npu_tile.reduce %t init %u : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j, %k)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.reduce': init must have the result type

// -----

// reduce: only a sum starts from an init tile.
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) apply {loops = ["d0", "c"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "c"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 1 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t init %t {combine = "row_stats"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.reduce': only a sum starts from an init tile

// -----

// A loop result after the first needs its npu_tile.tee.
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0, %1 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %r, %r2 = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32>, tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r, %r2 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
// CHECK: 'npu_tile.loop': its 1 results after the first need one 'npu_tile.tee' each, got tees into []

// -----

// A tee writes a loop result after the first (the store's is result 0).
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      npu_tile.tee %t into 0 (%i, %j)[4 * %i, 8 * %j] sizes [4, 8] view [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.tee' writes result 0 of its 'npu_tile.loop', which has no such result (the first is the store's)

// -----

// A tee runs every step, so before the reduce (ops after it run once per output tile).
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0, %1 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %r, %r2 = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32>, tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.tee %t into 1 (%i, %j)[4 * %i, 8 * %j] sizes [4, 8] view [4, 8] : tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r, %r2 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
// CHECK: 'npu_tile.tee' must come before the loop's 'npu_tile.reduce' (it runs every step)

// -----

// A tee's window must fit the result it writes.
func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0, %1 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %r, %r2 = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32>, tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      npu_tile.tee %t into 1 (%i, %j)[4 * %i, 8 * %j] sizes [4, 8] view [2, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r, %r2 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
// CHECK: 'npu_tile.tee': view [2, 8] does not have the elements of tensor<4x8xf32>
