// --mlir-elide-elementsattrs-if-larger=N (or --elide-elementsattrs-if-larger=N): dense
// literals of more than N elements print as `dense_resource<__elided__>`, in the output
// and in the IR dumps; a splat and a literal of N or fewer elements print whole.
// RUN: npu-opt %s --mlir-elide-elementsattrs-if-larger=4 | filecheck %s
// RUN: npu-opt %s --elide-elementsattrs-if-larger=4 -p npu-dce --print-ir-before=npu-dce -o /dev/null 2>&1 | filecheck %s
// RUN: npu-opt %s | filecheck %s --check-prefix=WHOLE
// RUN: not npu-opt %s --mlir-elide-elementsattrs-if-larger=-1 2>&1 | filecheck %s --check-prefix=BAD

func.func @f() -> (tensor<8xf32>, tensor<4xf32>, tensor<64xf32>) {
  %big = npu_graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>} : tensor<8xf32>
  %small = npu_graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %splat = npu_graph.constant {value = dense<0.5> : tensor<64xf32>} : tensor<64xf32>
  func.return %big, %small, %splat : tensor<8xf32>, tensor<4xf32>, tensor<64xf32>
}
// CHECK: %big = npu_graph.constant {value = dense_resource<__elided__> : tensor<8xf32>} : tensor<8xf32>
// CHECK: %small = npu_graph.constant {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>}
// CHECK: %splat = npu_graph.constant {value = dense<5.000000e-01> : tensor<64xf32>}
// WHOLE: dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]>
// BAD: error: argument --mlir-elide-elementsattrs-if-larger/--elide-elementsattrs-if-larger: expected a non-negative integer, got '-1'
