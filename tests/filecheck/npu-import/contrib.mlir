// onnxruntime's com.microsoft quantized ops (Inputs/make_inputs.py: contrib, its QOperator
// form) import as the QDQ form they compute: dequantize each 8-bit input, the float op,
// quantize (the float op and the quantize located at the node); npu-fuse-qdq then makes
// the QLinearAdd a qadd and the QGemm an integer matmul, and the program equals
// onnxruntime's run of the contrib ops. Channels-last pooling is refused, naming the node.
// RUN: npu-import %S/Inputs/contrib.onnx -o %t.mlir && filecheck %s --input-file=%t.mlir
// RUN: npu-opt %t.mlir -p npu-fuse-qdq --no-debuginfo --weights-file %t.weights.npz | filecheck %s --check-prefix=QDQ
// RUN: npu-run %S/Inputs/contrib.onnx --check 2>&1 | filecheck %s --check-prefix=SIM
// RUN: not npu-import %S/Inputs/contrib_nhwc.onnx 2>&1 | filecheck %s --check-prefix=NHWC

// CHECK:      func.func @main(%a: tensor<1x4x4x4xui8>, %b: tensor<1x4x4x4xui8>) -> tensor<1x5xui8>
// CHECK:      %[[DA:.*]] = npu_graph.dequantize %a, {{.*}} -> tensor<1x4x4x4xf32> loc("qadd/dequantize0")
// CHECK:      %[[DB:.*]] = npu_graph.dequantize %b, {{.*}} -> tensor<1x4x4x4xf32> loc("qadd/dequantize1")
// CHECK-NEXT: %[[S:.*]] = npu_graph.add %[[DA]], %[[DB]] : {{.*}} loc("qadd")
// CHECK:      npu_graph.quantize %[[S]], {{.*}} -> tensor<1x4x4x4xui8> loc("qadd")
// CHECK:      npu_graph.concat {{.*}} {axis = 1 : i64} : {{.*}} -> tensor<1x8x4x4xf32> loc("qcat")
// CHECK:      npu_graph.reduce_mean {{.*}} {axes = array<i64: 2, 3>, keepdims = true} {{.*}} loc("qgap")
// CHECK:      npu_graph.dequantize {{.*}} : (tensor<8x5xi8>, tensor<1x5xf32>, tensor<1x5xf32>) -> tensor<8x5xf32> loc("qgemm/dequantize_b")
// CHECK:      npu_graph.dequantize {{.*}} : (tensor<5xi32>, tensor<5xf32>, tensor<f32>) -> tensor<5xf32> loc("qgemm/dequantize_c")
// CHECK:      npu_graph.gemm {{.*}} loc("qgemm")
// CHECK:      npu_graph.softmax {{.*}} {axis = 1 : i64} {{.*}} loc("qsm")

// QDQ:        npu_graph.qadd %a, %b
// QDQ:        npu_graph.matmul {{.*}} : (tensor<1x8xui8>, tensor<8x5xi8>) -> tensor<1x5xi32>
// QDQ:        npu_graph.requantize

// SIM: check: ok vs onnxruntime

// NHWC: error: node 'qgap' (com.microsoft.QLinearGlobalAveragePool): channels-last data (channels_last = 1) is not supported
