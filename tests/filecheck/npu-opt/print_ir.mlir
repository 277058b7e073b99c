// IR dumps on stderr as mlir-opt prints them: before named passes or all of them, after
// a pass only when it changed the IR, after a pass that failed; each flag also under
// MLIR's --mlir- spelling.
// RUN: npu-opt %s -p npu-dce,npu-example-fold-idempotent --print-ir-before=npu-example-fold-idempotent -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE
// RUN: npu-opt %s -p npu-dce,npu-example-fold-idempotent --mlir-print-ir-before=npu-example-fold-idempotent -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE
// RUN: npu-opt %s -p npu-fuse,npu-tile --print-ir-before=npu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE-TILE
// RUN: npu-opt %s -p npu-dce,npu-example-fold-idempotent --print-ir-before-all -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE-ALL
// RUN: npu-opt %s -p npu-dce,npu-cse,npu-example-fold-idempotent --print-ir-after-change -o /dev/null 2>&1 | filecheck %s --check-prefix=CHANGE
// RUN: npu-opt %s -p npu-dce,npu-cse,npu-example-fold-idempotent --mlir-print-ir-after-change --mlir-print-ir-after=npu-cse,npu-dce -o /dev/null 2>&1 | filecheck %s --check-prefix=CHANGE-NAMED --allow-empty
// RUN: not npu-opt %s -p 'npu-dce,npu-shape-inference{input-shapes="q=3"}' --print-ir-after-failure 2>&1 | filecheck %s --check-prefix=FAILURE
// RUN: not npu-opt %s -p npu-dce --print-ir-before=npu-fusee 2>&1 | filecheck %s --check-prefix=UNKNOWN

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = npu_graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// BEFORE-NOT:  IR Dump Before npu-dce
// BEFORE:      // -----// IR Dump Before npu-example-fold-idempotent //----- //
// BEFORE:        %b = npu_graph.relu %a

// The lowering passes too: the fused kernel as npu-tile receives it, before any tiling.
// BEFORE-TILE-NOT:  IR Dump Before npu-fuse
// BEFORE-TILE:      // -----// IR Dump Before npu-tile //----- //
// BEFORE-TILE:        %b = npu_graph.fused(%x) {kernel = "npu_graph.relu", rule = "eltwise-chain"}
// BEFORE-TILE-NOT:    npu_tile.

// BEFORE-ALL:  // -----// IR Dump Before npu-dce //----- //
// BEFORE-ALL:  // -----// IR Dump Before npu-example-fold-idempotent //----- //

// npu-dce and npu-cse change nothing here, npu-example-fold-idempotent folds relu(relu(x)).
// CHANGE-NOT:  IR Dump After npu-dce
// CHANGE-NOT:  IR Dump After npu-cse
// CHANGE:      // -----// IR Dump After npu-example-fold-idempotent //----- //
// CHANGE-NEXT: builtin.module {
// CHANGE-NOT:  %b = npu_graph.relu

// Named passes that changed nothing: no dump.
// CHANGE-NAMED-NOT: IR Dump

// FAILURE:     // -----// IR Dump After npu-shape-inference Failed //----- //
// FAILURE-NEXT: builtin.module {
// FAILURE:     error: npu-shape-inference: input-shapes: @main has no input 'q'
// UNKNOWN: error: --print-ir-before: unknown pass(es) npu-fusee (npu-opt --list-passes lists them)
