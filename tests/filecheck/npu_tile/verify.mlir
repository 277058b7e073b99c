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

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["m", "n"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, parts = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    npu_tile.yield %a : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.kernel' k: parts must be at least 1, got 0

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["m", "n"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, predicted_cycles = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    npu_tile.yield %a : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.kernel' k: predicted_cycles must be at least 0, got -1

// -----

// The tile buffers fit the SRAM of the module's arch.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 65536>} {
  func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["m", "n"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, sram_bytes = 131072 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>):
      npu_tile.yield %a : tensor<4x8xf32>
    }
    func.return %0 : tensor<4x8xf32>
  }
}
// CHECK: 'npu_tile.kernel' k: SRAM of its tile buffers at bytes [0, 131072) is not within [0, 65536) (sram_bytes of the arch)

// -----

builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 65536>} {
  func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    %y = npu_tile.kernel "g"(%x) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 70000, offsets = [0, 1024]>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
    ^bb0(%a: tensor<1x4x8x8xf32>):
      %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %0 : tensor<1x4x8x8xf32>
    }
    func.return %y : tensor<1x4x8x8xf32>
  }
}
// CHECK: 'npu_tile.kernel' g: the SRAM arena of its plan at bytes [0, 70000) is not within [0, 65536) (sram_bytes of the arch)

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "k"(%x) eltwise {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 4096, offsets = [0, 1024]>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.kernel' k: a plan belongs to a layer group (kind group), not to a kernel of kind eltwise

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %y = npu_tile.kernel "g"(%x) group {loops = [], tile = array<i64>, grid = array<i64>, line_buffer, plan = #npu_tile.group<sram = 4096, offsets = [0, 1024]>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %0 = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    npu_tile.yield %0 : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.kernel' g: line_buffer needs a strip plan (#npu_tile.strip)

// -----

// The tile loop applies its kernel's plan.
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 2, 8>, grid = array<i64: 2, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[2 * %i, 8 * %j] sizes [2, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<2x8xf32> -> tensor<2x8xf32>
      npu_tile.store %s(%i, %j)[2 * %i, 8 * %j] sizes [2, 8] : tensor<2x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.loop': loops ['d0', 'd1'], tile [2, 8], grid [2, 1], double_buffer False do not match kernel k's loops ['d0', 'd1'], tile [4, 8], grid [1, 1], double_buffer False

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 0, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.loop': tile sizes [4, 8] and trip counts [0, 1] must be positive

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
  ^bb1(%i: index, %j: index):
    %t = npu_tile.load %x(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
    npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
  }
  func.return %r : tensor<4x8xf32>
}
// CHECK: 'npu_tile.loop' must be directly inside an 'npu_tile.kernel'

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 1, 1>, reductions = 0 : i64} -> tensor<4x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i, 8 * %j] sizes [4, 0] : tensor<4x8xf32>
      %s = npu_tile.reduce %t : tensor<4x0xf32> -> tensor<4x0xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 0] : tensor<4x0xf32>
    }
    npu_tile.yield %r : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.load': window sizes must be positive, got [4, 0]

// -----

// Without a pad value every tile's window starts inside the source (a window passing
// its end reads zeros): an offset of -1 leaves it at the first tile.
func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 2, 1>} : (tensor<8x8xf32>) -> tensor<8x8xf32> {
  ^bb0(%a: tensor<8x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 4, 8>, grid = array<i64: 2, 1>, reductions = 0 : i64} -> tensor<8x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[4 * %i - 1, 8 * %j] sizes [4, 8] : tensor<8x8xf32>
      %s = npu_tile.reduce %t : tensor<4x8xf32> -> tensor<4x8xf32>
      npu_tile.store %s(%i, %j)[4 * %i, 8 * %j] sizes [4, 8] : tensor<4x8xf32>
    }
    npu_tile.yield %r : tensor<8x8xf32>
  }
  func.return %0 : tensor<8x8xf32>
}
// CHECK: 'npu_tile.load': the starts of its tiles' windows along dim 0 [-1, 4) is not within [0, 8) (dim 0 of [8, 8]), and the load has no pad value

// -----

// Every tile stores into the result (the store clips at its end): a fourth tile of 3 rows starts past 8.
func.func @f(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = ["d0", "d1"], tile = array<i64: 3, 8>, grid = array<i64: 4, 1>} : (tensor<8x8xf32>) -> tensor<8x8xf32> {
  ^bb0(%a: tensor<8x8xf32>):
    %r = npu_tile.loop {loops = ["d0", "d1"], tile = array<i64: 3, 8>, grid = array<i64: 4, 1>, reductions = 0 : i64} -> tensor<8x8xf32> {
    ^bb1(%i: index, %j: index):
      %t = npu_tile.load %a(%i, %j)[3 * %i, 8 * %j] sizes [3, 8] pad 0.0 : tensor<8x8xf32>
      %s = npu_tile.reduce %t : tensor<3x8xf32> -> tensor<3x8xf32>
      npu_tile.store %s(%i, %j)[3 * %i, 8 * %j] sizes [3, 8] : tensor<3x8xf32>
    }
    npu_tile.yield %r : tensor<8x8xf32>
  }
  func.return %0 : tensor<8x8xf32>
}
// CHECK: 'npu_tile.store': the starts of its tiles' windows along dim 0 [0, 10) is not within [0, 8) (dim 0 of [8, 8]): every tile stores something

// -----

func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = npu_tile.kernel "k"(%x) eltwise {loops = [], tile = array<i64>, grid = array<i64>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %s = npu_tile.reduce %a : tensor<4x8xf32> -> tensor<4x8xf32>
    npu_tile.yield %s : tensor<4x8xf32>
  }
  func.return %0 : tensor<4x8xf32>
}
// CHECK: 'npu_tile.reduce' must be in an 'npu_tile.loop'

// -----

// A strip loop applies its kernel's strip plan.
func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = npu_tile.kernel "k"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %r = npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [1, 1], sram = 0>} -> tensor<1x4x8x8xf32> {
    ^bb1(%s: index):
      %t = npu_tile.load %a(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] pad 0.0 : tensor<1x4x8x8xf32>
      %u = npu_graph.relu %t : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      npu_tile.store %u(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>
    } group {
      %g = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    }
    npu_tile.yield %r : tensor<1x4x8x8xf32>
  }
  func.return %0 : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.strip_loop': its plan #npu_tile.strip<rows = 4, strips = 2, halo = [1, 1], sram = 0> must be the plan of the 'npu_tile.kernel' it is directly inside (#npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>)
