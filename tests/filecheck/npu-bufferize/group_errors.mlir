// RUN: %opt %s -p npu-bufferize --verify-diagnostics -o /dev/null

// Must not fire: a group whose body was not materialised (no loads) is an error,
// not a task reading DRAM tensors as if they were in SRAM.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
    // expected-error @+1 {{npu-bufferize: kernel 'act': a layer group's body has no loads (run npu-tile-loops first)}}
    %y = npu_tile.kernel "act"(%x) group {loops = [], tile = array<i64>, grid = array<i64>, plan = #npu_tile.group<sram = 2048, offsets = [0, 1024]>} : (tensor<4x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%0: tensor<4x64xf32>):
      %r = npu_graph.relu %0 : (tensor<4x64xf32>) -> tensor<4x64xf32>
      npu_tile.yield %r : tensor<4x64xf32>
    }
    func.return %y : tensor<4x64xf32>
  }
}
