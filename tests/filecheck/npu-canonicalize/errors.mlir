// RUN: not npu-opt %s -p npu-canonicalize 2>&1 | filecheck %s
// x * w needs w's values, and the module's weight file does not exist: a diagnosed
// error (exit 1), not a silent "nothing to do".

builtin.module attributes {npu.weights = "Inputs/missing.npz"} {
  func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %w = npu_graph.constant {weight = "ones"} : tensor<4x16xf32>
    %y = npu_graph.mul %x, %w : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    func.return %y : tensor<4x16xf32>
  }
}
// CHECK-NOT: Traceback
// CHECK:     error: npu-canonicalize: cannot read weight file '{{.*}}Inputs/missing.npz' (module attribute npu.weights)
