// An MLP (three Gemm transB=1, Relu between) imports to npu_graph.gemm/relu, each
// located at its ONNX node; weights go to the side file named by npu.weights.
// RUN: npu-import %S/Inputs/mlp.onnx -o %t.mlir && filecheck %s --input-file=%t.mlir
// RUN: rm -rf %t.dir && mkdir -p %t.dir && cd %t.dir && npu-import %S/Inputs/mlp.onnx --arch edge-small,cores=2 | filecheck %s --check-prefix=STDOUT
// RUN: ls %t.dir | filecheck %s --check-prefix=FILES

// CHECK:      builtin.module attributes {npu.arch = #npu.arch<cores = 4,
// CHECK-SAME: npu.weights = "{{.*}}.weights.npz"
// CHECK:      func.func @main(%x: tensor<2x8xf32>
// CHECK-SAME: -> tensor<2x4xf32>
// CHECK-SAME: npu.inputs = ["x"], npu.outputs = ["y"]
// CHECK:      %[[W1:.*]] = npu_graph.constant {weight = "fc1.weight"} : tensor<16x8xf32> loc("fc1.weight")
// CHECK:      %[[B1:.*]] = npu_graph.constant {value = dense<{{.*}}> : tensor<16xf32>} : tensor<16xf32> loc("fc1.bias")
// CHECK:      %[[H1:.*]] = npu_graph.gemm %x, %[[W1]], %[[B1]] {trans_b = true} : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x16xf32> loc("/fc1/Gemm")
// CHECK:      %[[R1:.*]] = npu_graph.relu %[[H1]] {{.*}} loc("/relu/Relu")
// CHECK:      npu_graph.gemm %[[R1]], {{.*}} loc("/fc2/Gemm")
// CHECK:      npu_graph.relu {{.*}} loc("/relu_1/Relu")
// CHECK:      %[[Y:.*]] = npu_graph.gemm {{.*}} -> tensor<2x4xf32> loc("/fc3/Gemm")
// CHECK:      func.return %[[Y]] : tensor<2x4xf32>

// STDOUT: npu.arch = #npu.arch<cores = 2, cube = 8x8x8,
// STDOUT-SAME: npu.weights = "mlp.weights.npz"
// STDOUT-COUNT-3: npu_graph.gemm

// FILES: mlp.weights.npz
