// RUN: %opt %s -p 'npu-convert-precision{type=f16}' | filecheck %s
// RUN: %opt %s -p 'npu-convert-precision{type=f32}' | filecheck %s --check-prefix=F32

// Tensors carrying integers stay f32: the token ids (an int64 input) and the gather
// indices computed from them, and a comparison's 0/1 result; the table they index is
// converted; the comparison computes in f32 and its mask is cast where a converted op
// reads it.
builtin.module {
  func.func @main(%ids: tensor<1x3xf32>, %x: tensor<1x3x2xf32>) -> tensor<1x3x2xf32> attributes {npu.inputs = ["ids", "x"], npu.input_dtypes = ["int64", "float32"]} {
    %one = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
    %table = npu_graph.constant {value = dense<[[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]]> : tensor<3x2xf32>} : tensor<3x2xf32>
    %i = npu_graph.sub %ids, %one : (tensor<1x3xf32>, tensor<f32>) -> tensor<1x3xf32>
    %e = npu_graph.gather %table, %i {axis = 0 : i64} : (tensor<3x2xf32>, tensor<1x3xf32>) -> tensor<1x3x2xf32>
    %mask = npu_graph.greater %x, %e : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
    %y = npu_graph.mul %e, %mask : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
    func.return %y : tensor<1x3x2xf32>
  }
  // CHECK-LABEL: func.func @main
  // CHECK-NEXT:  %one = npu_graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  // CHECK-NEXT:  %table = npu_graph.constant {{.*}} : tensor<3x2xf16>
  // CHECK-NEXT:  %i = npu_graph.sub %ids, %one : (tensor<1x3xf32>, tensor<f32>) -> tensor<1x3xf32>
  // CHECK-NEXT:  %e = npu_graph.gather %table, %i {axis = 0 : i64} : (tensor<3x2xf16>, tensor<1x3xf32>) -> tensor<1x3x2xf16>
  // CHECK-NEXT:  %[[E:.*]] = npu_graph.cast %e : (tensor<1x3x2xf16>) -> tensor<1x3x2xf32>
  // CHECK-NEXT:  %mask = npu_graph.greater %x, %[[E]] : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  // CHECK-NEXT:  %[[M:.*]] = npu_graph.cast %mask : (tensor<1x3x2xf32>) -> tensor<1x3x2xf16>
  // CHECK-NEXT:  %y = npu_graph.mul %e, %[[M]] : (tensor<1x3x2xf16>, tensor<1x3x2xf16>) -> tensor<1x3x2xf16>

  // A function already in f16 is left as it is (nothing to convert, no cast).
  func.func @half(%x: tensor<4xf16>) -> tensor<4xf16> {
    %y = npu_graph.relu %x : (tensor<4xf16>) -> tensor<4xf16>
    func.return %y : tensor<4xf16>
  }
  // CHECK-LABEL: func.func @half(%x: tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT:  %y = npu_graph.relu %x : (tensor<4xf16>) -> tensor<4xf16>
  // CHECK-NEXT:  func.return %y : tensor<4xf16>
}

// type=f32 changes nothing.
// F32-LABEL: func.func @main
// F32-NOT:   npu_graph.cast
// F32-NOT:   xf16
// F32:       func.func @half
