// RUN: %opt %s -p 'npu-convert-precision{type=f32}' | filecheck %s

// Per-node precisions that convert nothing: every named node f32, a node the module
// does not have, an op located at two nodes of different types (it takes the global
// type, f32), an op without a location, and an op already in f16.
builtin.module attributes {npu.precision = {"a" = "f32", "absent" = "bf16", "b" = "bf16", "c" = "f16", "h" = "bf16"}} {
  func.func @main(%x: tensor<4xf32>, %h: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf16>) {
    %a = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32> loc("a")
    %bc = npu_graph.neg %a : (tensor<4xf32>) -> tensor<4xf32> loc(fused["b", "c"])
    %u = npu_graph.exp %bc : (tensor<4xf32>) -> tensor<4xf32>
    %g = npu_graph.relu %h : (tensor<4xf16>) -> tensor<4xf16> loc("h")
    func.return %u, %g : tensor<4xf32>, tensor<4xf16>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:   npu_graph.cast
// CHECK-NOT:   xbf16
// CHECK:       func.return %u, %g
