// `npu-opt --list-passes`: a pass's description is the first paragraph of its docstring,
// whole (never cut at the end of a source line), and each option is followed by its help:
// the attribute docstring of its field, else the clause of the pass's docstring naming it.
// RUN: npu-opt --list-passes | filecheck %s

// CHECK:      npu-bn-fold {{ +}}Fold batchnorm into the conv2d in front of it, else into a per-channel multiply-add (whose positive scale moves through a ReLU into the conv after it).
// CHECK-NEXT:     conv: bool = true  - `conv=false` never folds into a conv (npu-fuse's `conv-bn` rule switched off): every batchnorm with constant parameters becomes the multiply-add.
// CHECK:      npu-default {{ +}}Run the default pipeline
// CHECK-NEXT:     disable: tuple[str, ...] = (empty)  - `disable=npu-fuse,...` skips passes by name (for bisection; the passes from npu-tile on are needed to reach executable tasks)
// CHECK-NEXT:     fuse-disable: tuple[str, ...] = (empty)  - `fuse-disable=rule,...` switches fusion rules off
// CHECK-NEXT:     double-buffer: bool = true  - `double-buffer=false` makes npu-tile never double buffer
// CHECK:      npu-early-load {{ +}}A task's weight loads into SRAM its core's previous task does not touch run while that task runs (`TaskOp.early`), a task's SRAM layout mirrored where that frees more.
// CHECK-NEXT:     mirror: bool = true  - `mirror=false` keeps every task's layout.
