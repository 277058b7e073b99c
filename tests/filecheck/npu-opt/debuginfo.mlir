// Locations (ONNX node names) print only with --print-debuginfo (or MLIR's spelling
// --mlir-print-debuginfo), as in mlir-opt; --no-debuginfo, once needed, is still accepted.
// RUN: npu-opt %s -p npu-fuse | filecheck %s --check-prefix=OFF
// RUN: npu-opt %s -p npu-fuse --no-debuginfo | filecheck %s --check-prefix=OFF
// RUN: npu-opt %s -p npu-fuse --print-debuginfo | filecheck %s --check-prefix=ON
// RUN: npu-opt %s -p npu-fuse --mlir-print-debuginfo | filecheck %s --check-prefix=ON
// RUN: npu-opt %s -p npu-fuse --print-ir-after=npu-fuse --print-debuginfo -o /dev/null 2>&1 | filecheck %s --check-prefix=ON

func.func @main(%x: tensor<4x32xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %w = npu_graph.constant {value = dense<0.5> : tensor<32x16xf32>} : tensor<32x16xf32>
  %m = npu_graph.matmul %x, %w : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32> loc("fc")
  %a = npu_graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("bias")
  func.return %a : tensor<4x16xf32>
}
// OFF-NOT: loc(
// ON: npu_graph.matmul {{.*}} loc("fc")
// ON: npu_graph.add {{.*}} loc("bias")
// ON: } loc(fused["fc", "bias"])
