// RUN: not npu-opt %s -p 'npu-tile,npu-layer-group{max-kernels=1}' 2>&1 | filecheck %s
// RUN: %opt %s -p npu-layer-group --verify-diagnostics -o /dev/null
// RUN: not npu-opt %s -p 'npu-tile,npu-layer-group{line-buffers=sometimes}' 2>&1 | filecheck %s --check-prefix=MODE
// RUN: not npu-opt %s -p 'npu-tile,npu-layer-group{search-budget=-1}' 2>&1 | filecheck %s --check-prefix=BUDGET

// A group needs at least two kernels (the first RUN); graph ops that npu-tile has not
// turned into kernels are named, at the op (the second RUN checks the expected-error
// annotation, as mlir-opt's --verify-diagnostics does).
builtin.module {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{npu-layer-group: expected only npu_tile.kernel and constants (run npu-tile first) at 'npu_graph.relu' (ONNX node act)}}
    %y = npu_graph.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("act")
    func.return %y : tensor<4x8xf32>
  }
}
// CHECK: error: npu-layer-group: max-kernels must be at least 2, got 1
// BUDGET: error: npu-layer-group: search-budget must be at least 0, got -1

// An unknown line-buffers mode is named with the known ones.
// MODE: error: npu-layer-group: line-buffers must be one of auto, always, never, got 'sometimes'
