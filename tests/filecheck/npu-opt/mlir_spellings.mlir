// MLIR's --mlir- spellings of the flags mlir-opt has under them (the dumps' own are in
// print_ir.mlir): --mlir-timing (--time-passes), --mlir-print-op-generic.
// RUN: npu-opt %s -p npu-dce --mlir-timing -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMING
// RUN: npu-opt %s --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: npu-opt --help | filecheck %s --check-prefix=HELP

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
// TIMING: Execution time report
// TIMING: npu-dce
// GENERIC: "npu_graph.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
// HELP-DAG: --print-debuginfo, --mlir-print-debuginfo
// HELP-DAG: --print-ir-before PASS[,PASS], --mlir-print-ir-before PASS[,PASS]
// HELP-DAG: --print-ir-after-change, --mlir-print-ir-after-change
// HELP-DAG: --print-ir-after-failure, --mlir-print-ir-after-failure
// HELP-DAG: --mlir-elide-elementsattrs-if-larger N, --elide-elementsattrs-if-larger N
// HELP-DAG: --debug-only CHANNEL[,CHANNEL]
