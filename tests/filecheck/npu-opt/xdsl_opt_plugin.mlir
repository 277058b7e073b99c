// The `xdsl.universe` entry point (pyproject.toml -> tools/xdsl_universe.py): plain
// `xdsl-opt` parses our dialects and runs our passes. A checkout installed before the
// entry point existed needs `pip install -e .` again.
// RUN: python -c "from importlib.metadata import entry_points as e; assert e(group='xdsl.universe', name='npu_compiler'), 'no xdsl.universe entry point npu_compiler: pip install -e .'"
// Round trip of every npu_graph op through xdsl-opt, checked as npu-opt's round trip is.
// RUN: xdsl-opt %S/../npu_graph/ops.mlir | xdsl-opt | filecheck %S/../npu_graph/ops.mlir
// Our passes run under xdsl-opt too.
// RUN: xdsl-opt %s -p npu-dce,npu-fuse | filecheck %s

func.func @main(%x: tensor<4x32xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %w = npu_graph.constant {value = dense<0.5> : tensor<32x16xf32>} : tensor<32x16xf32>
  %dead = npu_graph.relu %x : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = npu_graph.matmul %x, %w : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  %a = npu_graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  func.return %a : tensor<4x16xf32>
}
// CHECK-NOT: npu_graph.relu
// CHECK:     npu_graph.fused(%x, %w, %b) {{.*}}rule = "matmul-epilogue"
// CHECK:       npu_graph.matmul
// CHECK:       npu_graph.add
// CHECK:       npu_graph.yield
