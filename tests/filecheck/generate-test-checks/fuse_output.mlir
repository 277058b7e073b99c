// RUN: %opt %s --split-input-file -p npu-fuse > %t.out
// RUN: %generate-test-checks %t.out > %t.checks
// The generated checks pass on the output they came from ...
// RUN: filecheck %t.checks --input-file %t.out
// ... and fail once two operands are swapped.
// RUN: sed 's/npu_graph.add %%0, %%1/npu_graph.add %%1, %%0/' %t.out > %t.swapped
// RUN: not filecheck %t.checks --input-file %t.swapped
// What they look like: a label per function, its arguments on CHECK-SAME lines,
// values captured where defined and referenced where used.
// RUN: filecheck %s --check-prefix=GEN --input-file %t.checks
// GEN:      // CHECK-LABEL: func.func @chain(
// GEN-NEXT: // CHECK-SAME:      %{{\[\[}}X:[a-zA-Z0-9$._-]+]]: tensor<4x6xf32>,
// GEN-NEXT: // CHECK-SAME:      %{{\[\[}}Y:[a-zA-Z0-9$._-]+]]: tensor<4x6xf32>) -> tensor<4x6xf32> {
// GEN-NEXT: // CHECK:         %{{\[\[}}R:.*]] = npu_graph.fused(%{{\[\[}}X]], %{{\[\[}}Y]])
// GEN-NEXT: // CHECK:         ^bb0(%{{\[\[}}ARG_0:[a-zA-Z0-9$._-]+]]: tensor<4x6xf32>, %{{\[\[}}ARG_1:[a-zA-Z0-9$._-]+]]: tensor<4x6xf32>):
// GEN-NEXT: // CHECK:           %{{\[\[}}A:.*]] = npu_graph.add %{{\[\[}}ARG_0]], %{{\[\[}}ARG_1]]
// GEN:      // CHECK:         func.return %{{\[\[}}R]] : tensor<4x6xf32>
// GEN-NEXT: // CHECK:       }
// A weight is left to the pattern {{.*}}.
// GEN-LABEL: // CHECK-LABEL: func.func @weight(
// GEN:       // CHECK:         %{{\[\[}}W:.*]] = npu_graph.constant {{[{][{]}}.*}} : tensor<6xf32>

// The prefix and CHECK-NEXT options.
// RUN: %generate-test-checks %t.out --check-prefix=FUSED --next > %t.next
// RUN: filecheck %t.next --check-prefix=FUSED --input-file %t.out
// RUN: filecheck %s --check-prefix=NEXT --input-file %t.next
// NEXT:      // FUSED-LABEL: func.func @chain(
// NEXT-NEXT: // FUSED-SAME:      %{{\[\[}}X:
// NEXT-NEXT: // FUSED-SAME:      %{{\[\[}}Y:
// NEXT-NEXT: // FUSED-NEXT:    %{{\[\[}}R:.*]] = npu_graph.fused

func.func @chain(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %a = npu_graph.add %x, %y : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %r = npu_graph.relu %a : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %r : tensor<4x6xf32>
}

// -----

func.func @weight(%x: tensor<6xf32>) -> tensor<6xf32> {
  %w = npu_graph.constant {weight = "w"} : tensor<6xf32>
  %y = npu_graph.mul %x, %w : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  func.return %y : tensor<6xf32>
}
