// Resize (lowering/importer/resize.py): nearest x2 upsampling on H and W with floor
// rounding repeats each element, so it is one broadcast of a reshape with a unit axis
// after each upsampled axis; linear resizing is a constant interpolation matrix per
// axis, multiplied on the left for H (batch dims broadcast) and on the right for W.
// The model compiles and matches onnxruntime.
// RUN: npu-import %S/Inputs/resize.onnx -o %t.mlir && filecheck %s --input-file=%t.mlir
// RUN: npu-run %S/Inputs/resize.onnx --check 2>&1 | filecheck %s --check-prefix=SIM

// CHECK:      %[[WIDE:[0-9]+]] = npu_graph.reshape %x : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x1x4x1xf32> loc("up")
// CHECK-NEXT: %[[REP:[0-9]+]] = npu_graph.expand %[[WIDE]] : (tensor<1x2x4x1x4x1xf32>) -> tensor<1x2x4x2x4x2xf32> loc("up")
// CHECK-NEXT: %[[UP:[0-9]+]] = npu_graph.reshape %[[REP]] : {{.*}} -> tensor<1x2x8x8xf32> loc("up")
// CHECK-NEXT: %[[MH:[0-9]+]] = npu_graph.constant {weight = "down.interp"} : tensor<4x8xf32> loc("down")
// CHECK-NEXT: %[[H:[0-9]+]] = npu_graph.matmul %[[MH]], %[[UP]] : (tensor<4x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x4x8xf32> loc("down")
// CHECK-NEXT: %[[MW:[0-9]+]] = npu_graph.constant {weight = "down.interp_1"} : tensor<8x6xf32> loc("down")
// CHECK-NEXT: %[[W:[0-9]+]] = npu_graph.matmul %[[H]], %[[MW]] : (tensor<1x2x4x8xf32>, tensor<8x6xf32>) -> tensor<1x2x4x6xf32> loc("down")
// CHECK-NEXT: func.return %[[W]]
// CHECK-NOT:  npu_graph.gather

// SIM: check: ok vs onnxruntime
