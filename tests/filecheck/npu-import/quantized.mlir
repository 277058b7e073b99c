// Quantized ONNX at import (Inputs/make_inputs.py: qdq, qlinear, q16): QuantizeLinear and
// DequantizeLinear become npu_graph.quantize/dequantize with f32 scale and zero point (a
// per-axis [C] one reshaped to broadcast), never folded: the int8 weight stays an i8
// constant and the int32 bias an i32 one. QLinearConv/QLinearMatMul are an integer
// conv2d/matmul into i32 with their zero points and a requantize; max pooling and
// reshapes stay on the uint8 values; both run on the simulator exactly as onnxruntime.
// A 16-bit zero point is refused, naming the node.
// RUN: npu-import %S/Inputs/qdq10.onnx -o %t.10.mlir && filecheck %s --check-prefixes=QDQ,QDQ10 --input-file=%t.10.mlir
// RUN: npu-import %S/Inputs/qdq21.onnx -o %t.21.mlir && filecheck %s --check-prefixes=QDQ,QDQ21 --input-file=%t.21.mlir
// RUN: npu-import %S/Inputs/qlinear.onnx -o %t.ql.mlir && filecheck %s --check-prefix=QLINEAR --input-file=%t.ql.mlir
// RUN: npu-run %S/Inputs/qlinear.onnx --check 2>&1 | filecheck %s --check-prefix=SIM
// RUN: npu-run %S/Inputs/qdq21.onnx --check 2>&1 | filecheck %s --check-prefix=SIM
// RUN: not npu-import %S/Inputs/q16.onnx 2>&1 | filecheck %s --check-prefix=Q16

// QDQ:        func.func @main(%x: tensor<2x3x6x6xf32>) -> tensor<2x4x6x6xf32>
// QDQ:        npu_graph.quantize %x, %{{[0-9]+}}, %{{[0-9]+}} : (tensor<2x3x6x6xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3x6x6xui8> loc("qx")
// QDQ:        npu_graph.dequantize {{.*}} -> tensor<2x3x6x6xf32> loc("dqx")
// QDQ:        %[[W:[0-9]+]] = npu_graph.constant {weight = "w"} : tensor<4x3x3x3xi8>
// QDQ10:      npu_graph.dequantize %[[W]], {{.*}} : (tensor<4x3x3x3xi8>, tensor<f32>, tensor<f32>) -> tensor<4x3x3x3xf32> loc("dqw")
// QDQ21:      npu_graph.dequantize %[[W]], {{.*}} : (tensor<4x3x3x3xi8>, tensor<4x1x1x1xf32>, tensor<4x1x1x1xf32>) -> tensor<4x3x3x3xf32> loc("dqw")
// QDQ:        npu_graph.constant {value = dense<[39, -71, -110, -140]> : tensor<4xi32>} : tensor<4xi32>
// QDQ:        npu_graph.dequantize {{.*}} : (tensor<4xi32>, {{.*}}) -> tensor<4xf32> loc("dqb")
// QDQ:        npu_graph.conv2d {{.*}} -> tensor<2x4x6x6xf32> loc("conv")
// QDQ:        npu_graph.quantize {{.*}} -> tensor<2x4x6x6xi8> loc("qy")
// QDQ:        npu_graph.dequantize {{.*}} : (tensor<2x4x6x6xi8>, tensor<f32>, tensor<f32>) -> tensor<2x4x6x6xf32> loc("dqy")

// QLINEAR:      func.func @main(%x: tensor<1x2x5x5xui8>) -> tensor<1x4xui8> attributes {npu.inputs = ["x"], npu.outputs = ["y"], npu.input_dtypes = ["uint8"], npu.output_dtypes = ["uint8"]}
// QLINEAR:      npu_graph.conv2d %x, {{.*}} {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, input_zero_point = 100 : i64} : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<3xi32>) -> tensor<1x3x3x3xi32> loc("qconv")
// QLINEAR:      npu_graph.constant {value = dense<0.0119999992> : tensor<f32>}
// QLINEAR:      npu_graph.requantize {{.*}} : (tensor<1x3x3x3xi32>, tensor<f32>, tensor<f32>) -> tensor<1x3x3x3xui8> loc("qconv")
// QLINEAR-NEXT: npu_graph.maxpool {{.*}} : (tensor<1x3x3x3xui8>) -> tensor<1x3x2x2xui8> loc("pool")
// QLINEAR-NEXT: npu_graph.reshape {{.*}} : (tensor<1x3x2x2xui8>) -> tensor<1x12xui8> loc("flat")
// QLINEAR:      npu_graph.matmul {{.*}} {input_zero_point = 120 : i64, weight_zero_point = 128 : i64} : (tensor<1x12xui8>, tensor<12x4xui8>) -> tensor<1x4xi32> loc("qmm")
// QLINEAR:      npu_graph.requantize {{.*}} -> tensor<1x4xui8> loc("qmm")
// QLINEAR-NEXT: func.return

// SIM: check: ok vs onnxruntime (max abs err 0, max rel err 0)

// Q16-NOT: Traceback
// Q16: q16.onnx: error: node 'q16' (QuantizeLinear, opset 21): y_zero_point has element type int16; only int8 and uint8 quantization is supported (4- and 16-bit integers and float8 are not)
