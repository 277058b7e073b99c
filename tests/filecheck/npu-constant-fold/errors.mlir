// RUN: not npu-opt %s -p npu-constant-fold 2>&1 | filecheck %s
// The module names a weight file that does not exist: a diagnosed error (exit 1), not
// a silent "nothing to fold".

builtin.module attributes {npu.weights = "Inputs/missing.npz"} {
  func.func @main() -> tensor<8x4xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<4x8xf32>
    %t = npu_graph.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32> loc("/fc/Transpose")
    func.return %t : tensor<8x4xf32>
  }
}
// CHECK-NOT: Traceback
// CHECK:     error: npu-constant-fold: cannot read weight file '{{.*}}Inputs/missing.npz' (module attribute npu.weights)
