// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s
// RUN: %opt %s --split-input-file -p 'npu-fuse{disable=pool-epilogue}' | filecheck %s --check-prefix=OFF
// pool-epilogue: a max pool and the elementwise chain after it (a bias add and a ReLU
// that npu-hoist-pool moved there) are one kernel; switched off, the chain is its own
// eltwise-chain kernel. (Numerics: tests/test_hoist_pool.py.)

// CHECK-LABEL: func.func @main
// CHECK:         %r = npu_graph.fused(%x, %b) {kernel = "pool", rule = "pool-epilogue"}
// CHECK-NEXT:    ^bb0(%0: tensor<1x4x8x8xf32>, %1: tensor<4x1x1xf32>):
// CHECK-NEXT:      %p = npu_graph.maxpool %0
// CHECK-NEXT:      %a = npu_graph.add %p, %1
// CHECK-NEXT:      %r_1 = npu_graph.relu %a
// CHECK-NEXT:      npu_graph.yield %r_1
// OFF-LABEL: func.func @main
// OFF:         %p = npu_graph.maxpool %x
// OFF:         rule = "eltwise-chain"
builtin.module {
  func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %b = npu_graph.constant {value = dense<[[[0.5]], [[-0.5]], [[1.0]], [[-1.0]]]> : tensor<4x1x1xf32>} : tensor<4x1x1xf32>
    %p = npu_graph.maxpool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> loc("pool")
    %a = npu_graph.add %p, %b : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32> loc("bias")
    %r = npu_graph.relu %a : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> loc("relu")
    func.return %r : tensor<1x4x4x4xf32>
  }
}

// -----

// Must not fire: the pool's result is also returned (the chain would have to
// recompute it or store it twice).
// CHECK-LABEL: func.func @main
// CHECK:         %p = npu_graph.maxpool %x
// CHECK-NOT:     rule = "pool-epilogue"
builtin.module {
  func.func @main(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) attributes {npu.inputs = ["x"], npu.outputs = ["p", "y"]} {
    %p = npu_graph.maxpool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> loc("pool")
    %r = npu_graph.relu %p : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> loc("relu")
    func.return %p, %r : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
  }
}
