// RUN: %opt %s --split-input-file --verify-diagnostics | filecheck %s
// One chunk per verifier error of npu_tile.strip_loop and npu_tile.line_buffer.

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = npu_tile.kernel "k"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %r = npu_tile.strip_loop {rows = 2 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} -> tensor<1x4x8x8xf32> {
    ^bb1(%s: index):
      %t = npu_tile.load %a(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] pad 0.0 : tensor<1x4x8x8xf32>
      %n = npu_tile.line_buffer %t : tensor<1x4x4x8xf32> -> tensor<1x4x6x8xf32>
      %c = npu_graph.slice %n {starts = array<i64: 0, 0, 2, 0>, ends = array<i64: 1, 4, 6, 8>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x4x8xf32>
      %u = npu_graph.relu %c : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      npu_tile.store %u(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>
    } group {
      %g = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    }
    npu_tile.yield %r : tensor<1x4x8x8xf32>
  }
  func.return %0 : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.strip_loop': rows = 2, strips = 2 do not match its plan

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = npu_tile.kernel "k"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %r = npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} -> tensor<1x4x8x8xf32> {
    ^bb1(%s: index, %z: index):
      %u = npu_graph.slice %a {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 4, 4, 8>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x8xf32>
      npu_tile.store %u(%s, %z)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>
    } group {
      %g = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    }
    npu_tile.yield %r : tensor<1x4x8x8xf32>
  }
  func.return %0 : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.strip_loop': the body takes one index, the strip's

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = npu_tile.kernel "k"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %r = npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} -> tensor<1x4x8x8xf32> {
    ^bb1(%s: index):
      %t = npu_tile.load %a(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] pad 0.0 : tensor<1x4x8x8xf32>
      %n = npu_tile.line_buffer %t : tensor<1x4x4x8xf32> -> tensor<1x4x6x8xf32>
      %c = npu_graph.slice %n {starts = array<i64: 0, 0, 2, 0>, ends = array<i64: 1, 4, 6, 8>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x4x8xf32>
      %u = npu_graph.relu %c : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      %v = npu_tile.reduce %u : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
      npu_tile.store %v(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>
    } group {
      %g = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    }
    npu_tile.yield %r : tensor<1x4x8x8xf32>
  }
  func.return %0 : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.strip_loop': a strip loop reduces nothing ('npu_tile.reduce')

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = npu_tile.kernel "k"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %r = npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} -> tensor<1x4x8x8xf32> {
    ^bb1(%s: index):
      %t = npu_tile.load %a(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] pad 0.0 : tensor<1x4x8x8xf32>
      %n = npu_tile.line_buffer %t : tensor<1x4x4x8xf32> -> tensor<1x4x6x8xf32>
      %c = npu_graph.slice %n {starts = array<i64: 0, 0, 2, 0>, ends = array<i64: 1, 4, 6, 8>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x4x8xf32>
      %u = npu_graph.relu %c : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      npu_tile.store %u(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>
    } group {
      %g = npu_graph.reshape %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x64xf32>
    }
    npu_tile.yield %r : tensor<1x4x8x8xf32>
  }
  func.return %0 : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.strip_loop': its group's last op must compute its first result (tensor<1x4x8x8xf32>), and an 'npu_tile.yield' ending the group must name it first, then the inner values its other results hold

// -----

func.func @f(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = npu_tile.kernel "k"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %r = npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} -> tensor<1x4x8x8xf32> {
    ^bb1(%s: index):
      %t = npu_tile.load %a(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] pad 0.0 : tensor<1x4x8x8xf32>
      %n = npu_tile.line_buffer %t : tensor<1x4x4x8xf32> -> tensor<1x4x6x4xf32>
      %c = npu_graph.slice %n {starts = array<i64: 0, 0, 2, 0>, ends = array<i64: 1, 4, 6, 8>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x4xf32>) -> tensor<1x4x4x8xf32>
      %u = npu_graph.relu %c : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      npu_tile.store %u(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>
    } group {
      %g = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    }
    npu_tile.yield %r : tensor<1x4x8x8xf32>
  }
  func.return %0 : tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.line_buffer': tensor<1x4x4x8xf32> must be fewer rows (dim -2) of tensor<1x4x6x4xf32>

// -----

// Two results (the group stores %g too) but no tee writes the second.
func.func @f(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %0, %1 = npu_tile.kernel "k"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %r, %q = npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} -> tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> {
    ^bb1(%s: index):
      %t = npu_tile.load %a(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] pad 0.0 : tensor<1x4x8x8xf32>
      %u = npu_graph.relu %t : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      %v = npu_graph.neg %u : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      npu_tile.store %v(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>
    } group {
      %g = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      %h = npu_graph.neg %g : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %h, %g : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
    }
    npu_tile.yield %r, %q : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
  }
  func.return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.strip_loop': each of its 1 results after the first needs one 'npu_tile.tee' writing it, got tees into []

// -----

// A group yield that does not name the last op's result first.
func.func @f(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %0, %1 = npu_tile.kernel "k"(%x) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 2>, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} : (tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  ^bb0(%a: tensor<1x4x8x8xf32>):
    %r, %q = npu_tile.strip_loop {rows = 4 : i64, strips = 2 : i64, plan = #npu_tile.strip<rows = 4, strips = 2, halo = [0, 0], sram = 0>} -> tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> {
    ^bb1(%s: index):
      %t = npu_tile.load %a(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] pad 0.0 : tensor<1x4x8x8xf32>
      %u = npu_graph.relu %t : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      %v = npu_graph.neg %u : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
      npu_tile.tee %u into 1 (%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] view [1, 4, 8, 8] : tensor<1x4x4x8xf32>
      npu_tile.store %v(%s)[0, 0, 4 * %s, 0] sizes [1, 4, 4, 8] : tensor<1x4x4x8xf32>
    } group {
      %g = npu_graph.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      %h = npu_graph.neg %g : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
      npu_tile.yield %g, %h : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
    }
    npu_tile.yield %r, %q : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
  }
  func.return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}
// CHECK: 'npu_tile.strip_loop': its group's last op must compute its first result (tensor<1x4x8x8xf32>), and an 'npu_tile.yield' ending the group must name it first
