// RUN: %opt %s -p 'npu-convert-precision{type=bf16}' | filecheck %s
// RUN: %opt %s -p 'npu-convert-precision{type=bf16}' --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: %opt %s -p 'npu-convert-precision{type=f16}' --remarks 2>&1 | filecheck %s --check-prefix=F16

// Must not fire on a model's own 16-bit tensors: an all-f16 model asked for bf16 keeps
// its f16 ops (only f32 tensors are converted) and one remark counts them - the run is
// not in bf16, and the remark says so. Asked for f16, nothing is said.
builtin.module {
  func.func @main(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
    %r = npu_graph.relu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    %s = npu_graph.sigmoid %r : (tensor<4x8xf16>) -> tensor<4x8xf16>
    func.return %s : tensor<4x8xf16>
  }
}
// CHECK:       %r = npu_graph.relu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:  %s = npu_graph.sigmoid %r : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NOT:   bf16

// REMARK:      remark: npu-convert-precision: missed: [] 2 ops of @main stay in f16, the model's own type: only f32 tensors are converted
// F16:         func.return %s : tensor<4x8xf16>
// F16-NOT:     stay in
