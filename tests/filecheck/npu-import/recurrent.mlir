// A GRU (lowering/importer/recurrent.py) unrolled over its 2 steps: one gemm projects
// the inputs of every step (W transposed at import, Wb + Rb as its bias); each step
// slices its projection, multiplies h by the transposed R of z and r (one constant
// shared by the steps; the initial h is zeros), takes one sigmoid of z and r together,
// then the candidate from (r * h) @ Rhᵀ and h' = ĥ + z * (h - ĥ). Y concatenates the
// steps' h, Y_h is the last. The model compiles and matches onnxruntime.
// RUN: npu-import %S/Inputs/gru.onnx | filecheck %s
// RUN: npu-run %S/Inputs/gru.onnx --check 2>&1 | filecheck %s --check-prefix=SIM

// CHECK:      %[[X:[0-9]+]] = npu_graph.reshape %x : (tensor<2x1x2xf32>) -> tensor<2x2xf32> loc("gru")
// CHECK:      %[[P:[0-9]+]] = npu_graph.gemm %[[X]], %{{[0-9]+}}, %{{[0-9]+}} : (tensor<2x2xf32>, tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: %[[PROJ:[0-9]+]] = npu_graph.reshape %[[P]] : (tensor<2x6xf32>) -> tensor<2x1x1x6xf32>
// CHECK-NEXT: %[[H0:[0-9]+]] = npu_graph.constant {value = dense<0.000000e+00> : tensor<1x1x1x2xf32>}

// Step 0: z and r.
// CHECK:      %[[RZR:[0-9]+]] = npu_graph.constant {{.*}} : tensor<1x2x4xf32>
// CHECK-NEXT: %[[HR0:[0-9]+]] = npu_graph.matmul %[[H0]], %[[RZR]]
// CHECK-NEXT: %[[XZR0:[0-9]+]] = npu_graph.slice %[[PROJ]] {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 1, 1, 4>
// CHECK-NEXT: %[[SUM0:[0-9]+]] = npu_graph.add %[[XZR0]], %[[HR0]]
// CHECK-NEXT: %[[ZR0:[0-9]+]] = npu_graph.sigmoid %[[SUM0]]
// CHECK-NEXT: %[[Z0:[0-9]+]] = npu_graph.slice %[[ZR0]] {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 1, 1, 2>
// CHECK-NEXT: %[[R0:[0-9]+]] = npu_graph.slice %[[ZR0]] {starts = array<i64: 0, 0, 0, 2>, ends = array<i64: 1, 1, 1, 4>
// Step 0: the candidate and the new h.
// CHECK-NEXT: %[[RH0:[0-9]+]] = npu_graph.mul %[[R0]], %[[H0]]
// CHECK-NEXT: %[[RH:[0-9]+]] = npu_graph.constant {{.*}} : tensor<1x2x2xf32>
// CHECK-NEXT: %[[IN0:[0-9]+]] = npu_graph.matmul %[[RH0]], %[[RH]]
// CHECK-NEXT: %[[XH0:[0-9]+]] = npu_graph.slice %[[PROJ]] {starts = array<i64: 0, 0, 0, 4>, ends = array<i64: 1, 1, 1, 6>
// CHECK-NEXT: %[[PRE0:[0-9]+]] = npu_graph.add %[[XH0]], %[[IN0]]
// CHECK-NEXT: %[[C0:[0-9]+]] = npu_graph.tanh %[[PRE0]]
// CHECK-NEXT: %[[D0:[0-9]+]] = npu_graph.sub %[[H0]], %[[C0]]
// CHECK-NEXT: %[[ZD0:[0-9]+]] = npu_graph.mul %[[Z0]], %[[D0]]
// CHECK-NEXT: %[[H1:[0-9]+]] = npu_graph.add %[[C0]], %[[ZD0]]

// Step 1 reads row 1 of the projection and the same R constants.
// CHECK-NEXT: npu_graph.matmul %[[H1]], %[[RZR]]
// CHECK-NEXT: npu_graph.slice %[[PROJ]] {starts = array<i64: 1, 0, 0, 0>, ends = array<i64: 2, 1, 1, 4>
// CHECK:      npu_graph.matmul %{{[0-9]+}}, %[[RH]]
// CHECK-NEXT: npu_graph.slice %[[PROJ]] {starts = array<i64: 1, 0, 0, 4>, ends = array<i64: 2, 1, 1, 6>
// CHECK:      %[[C1:[0-9]+]] = npu_graph.tanh
// CHECK:      %[[H2:[0-9]+]] = npu_graph.add %[[C1]]
// CHECK-NEXT: %[[Y:[0-9]+]] = npu_graph.concat %[[H1]], %[[H2]] {axis = 0 : i64} : {{.*}} -> tensor<2x1x1x2xf32>
// CHECK-NEXT: %[[YH:[0-9]+]] = npu_graph.reshape %[[H2]] : (tensor<1x1x1x2xf32>) -> tensor<1x1x2xf32>
// CHECK-NEXT: func.return %[[Y]], %[[YH]]

// SIM: check: ok vs onnxruntime
