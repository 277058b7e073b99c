// `npu-opt --list-passes`: each pass with the first line of its docstring, then its
// options indented, as `name: type = default` (the name as written in `pass{name=v}`).
// RUN: npu-opt --list-passes | filecheck %s

// CHECK:      npu-example-fold-idempotent {{ +}}Template pass: fold f(f(x)) into f(x)
// CHECK-NEXT:     ops: tuple[str, ...] = relu,abs,floor,ceil,round,trunc,sign
// CHECK:      npu-fuse {{ +}}Form fused kernels
// CHECK-NEXT:     disable: tuple[str, ...] = (empty)
// CHECK:      npu-layer-group {{ +}}Group consecutive kernels
// CHECK-NEXT:     max-kernels: int = 128
// CHECK-NEXT:     line-buffers: str = "auto"
// CHECK-NEXT:     search-budget: int = 200000
// A pass without options is one line: the next line is the next pass.
// CHECK:      npu-memplan {{ +}}Assign DRAM offsets
// CHECK-NEXT: {{^  npu-}}
// CHECK:      npu-tile {{ +}}Choose tile sizes
// CHECK-NEXT:     double-buffer: bool = true
