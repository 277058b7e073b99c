// Ops without a converter that ONNX defines as functions import as their function body
// (lowering/importer/functions.py): Elu's static body (alpha taken from the node), Mish's
// (its Softplus has a converter: a body op is converted or expanded in turn, as Celu's
// Elu is in tests/test_functions.py), LogSoftmax's context-dependent
// body built for this node (axis 2). Each body op is located NODE/OpType#i. The model
// compiles and matches onnxruntime.
// RUN: npu-import %S/Inputs/functions.onnx | filecheck %s
// RUN: npu-run %S/Inputs/functions.onnx --check 2>&1 | filecheck %s --check-prefix=SIM
// RUN: not npu-import %S/Inputs/function_unsupported.onnx 2>&1 | filecheck %s --check-prefix=BADBODY
// RUN: not npu-import %S/Inputs/opset6.onnx 2>&1 | filecheck %s --check-prefix=OPSET6
// RUN: npu-import %S/Inputs/opset28.onnx | filecheck %s --check-prefix=OPSET28

// CHECK:      %[[NEG:[0-9]+]] = npu_graph.less %x, %{{[0-9]+}} : {{.*}} loc("elu/Less#6")
// CHECK-NEXT: %[[EXP:[0-9]+]] = npu_graph.exp %x : {{.*}} loc("elu/Exp#7")
// CHECK:      %[[EM1:[0-9]+]] = npu_graph.sub %[[EXP]], %{{[0-9]+}} : {{.*}} loc("elu/Sub#8")
// CHECK-NEXT: %[[ALPHA:[0-9]+]] = npu_graph.constant {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32> loc("elu/CastLike#1")
// CHECK-NEXT: %[[SCALED:[0-9]+]] = npu_graph.mul %[[ALPHA]], %[[EM1]] : {{.*}} loc("elu/Mul#9")
// CHECK-NEXT: %[[ELU:[0-9]+]] = npu_graph.where %[[NEG]], %[[SCALED]], %x : {{.*}} loc("elu/Where#10")
// CHECK-NEXT: npu_graph.softplus %[[ELU]] : {{.*}} loc("mish/Softplus#0")
// CHECK-NEXT: npu_graph.tanh {{.*}} loc("mish/Tanh#1")
// CHECK-NEXT: %[[MISH:[0-9]+]] = npu_graph.mul %[[ELU]], %{{[0-9]+}} : {{.*}} loc("mish/Mul#2")
// CHECK-NEXT: npu_graph.reduce_max %[[MISH]] {axes = array<i64: 2>, keepdims = true} {{.*}} loc("lsm/ReduceMax#1")
// CHECK:      npu_graph.reduce_sum {{.*}} {axes = array<i64: 2>, keepdims = true} {{.*}} loc("lsm/ReduceSum#4")
// CHECK:      %[[OUT:[0-9]+]] = npu_graph.sub {{.*}} loc("lsm/Sub#6")
// CHECK-NEXT: func.return %[[OUT]]

// SIM: check: ok vs onnxruntime

// BADBODY-NOT: Traceback
// BADBODY:      error: node 'bern' (Bernoulli, opset 18): imported as its ONNX function body, which does not import; it uses RandomUniformLike, not supported:
// BADBODY-NEXT: error: node 'bern/RandomUniformLike#{{[0-9]+}}' (RandomUniformLike, opset {{[0-9]+}}): unsupported operator

// OPSET6: error: the model uses ONNX opset 6; supported opsets are 7..{{[0-9]+}}

// OPSET28: npu_graph.relu %x {{.*}} loc("relu")
