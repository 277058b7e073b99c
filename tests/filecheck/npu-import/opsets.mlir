// The same graph at opset 11 and 18 (Inputs/make_inputs.py, opset_graph): axes and
// split sizes move from attributes to inputs, Softmax before 13 flattens to 2-D at its
// axis, and the Shape -> Gather -> Unsqueeze -> Concat -> Reshape subgraph folds at
// import (only the final reshape is left). Both compile and match onnxruntime.
// RUN: npu-import %S/Inputs/ops11.onnx | filecheck %s --check-prefixes=CHECK,OPS11
// RUN: npu-import %S/Inputs/ops18.onnx | filecheck %s --check-prefixes=CHECK,OPS18
// RUN: npu-run %S/Inputs/ops11.onnx --check --arch default,sram_bytes=4096,cores=1 2>&1 | filecheck %s --check-prefix=SIM
// RUN: npu-run %S/Inputs/ops18.onnx --check --arch default,sram_bytes=4096,cores=1 2>&1 | filecheck %s --check-prefix=SIM

// CHECK:      func.func @main(%x: tensor<2x6x9xf32>) -> tensor<2x18xf32>
// CHECK-NEXT:   %0 = npu_graph.reshape %x : (tensor<2x6x9xf32>) -> tensor<2x1x6x9xf32> loc("unsq")
// CHECK-NEXT:   %1 = npu_graph.slice %0 {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 2, 1, 6, 3>, steps = array<i64: 1, 1, 1, 1>} : (tensor<2x1x6x9xf32>) -> tensor<2x1x6x3xf32> loc("split")
// CHECK-NEXT:   %2 = npu_graph.slice %0 {starts = array<i64: 0, 0, 0, 3>, ends = array<i64: 2, 1, 6, 6>,
// CHECK-NEXT:   %3 = npu_graph.slice %0 {starts = array<i64: 0, 0, 0, 6>, ends = array<i64: 2, 1, 6, 9>,
// CHECK-NEXT:   %4 = npu_graph.reduce_sum %2 {axes = array<i64: 3>, keepdims = true} : (tensor<2x1x6x3xf32>) -> tensor<2x1x6x1xf32> loc("rsum")
// OPS11-NEXT:   %5 = npu_graph.reshape %1 : (tensor<2x1x6x3xf32>) -> tensor<2x18xf32> loc("softmax")
// OPS11-NEXT:   %6 = npu_graph.softmax %5 {axis = 1 : i64} : (tensor<2x18xf32>) -> tensor<2x18xf32> loc("softmax")
// OPS11-NEXT:   %7 = npu_graph.reshape %6 : (tensor<2x18xf32>) -> tensor<2x1x6x3xf32> loc("softmax")
// OPS18-NEXT:   %5 = npu_graph.softmax %1 {axis = 2 : i64} : (tensor<2x1x6x3xf32>) -> tensor<2x1x6x3xf32> loc("softmax")
// CHECK-NEXT:   npu_graph.reduce_mean %3 {axes = array<i64: 3>, keepdims = true} : (tensor<2x1x6x3xf32>) -> tensor<2x1x6x1xf32> loc("rmean")
// CHECK-NEXT:   npu_graph.concat %4, %{{[0-9]+}}, %4 {axis = 3 : i64} : {{.*}} -> tensor<2x1x6x3xf32> loc("concat")
// CHECK-NEXT:   npu_graph.mul
// CHECK-NEXT:   npu_graph.reshape {{.*}} -> tensor<2x18xf32> loc("flatten")
// CHECK-NEXT:   func.return

// SIM: check: ok vs onnxruntime
