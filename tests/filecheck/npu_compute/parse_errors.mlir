// RUN: %opt %s --split-input-file --parsing-diagnostics | filecheck %s
// `npu_compute.eltwise`'s function is an `EltwiseFn` and `npu_compute.pool`'s kind a
// `PoolKind`: an unknown one is reported while parsing.

func.func @f(%a: memref<4x8xf32, "sram">) {
  npu_compute.eltwise cbrt %a -> %a : memref<4x8xf32, "sram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK:      parse_errors.mlir:6:23: error: Expected `relu`, `add`, {{.*}}, `clip`, or `where`.
// CHECK-NEXT:   npu_compute.eltwise cbrt %a -> %a
// CHECK-NEXT:                       ^^^^

// -----

func.func @f(%a: memref<1x1x8x8xf32, "sram">, %o: memref<1x1x4x4xf32, "sram">) {
  npu_compute.pool avg %a -> %o {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : memref<1x1x8x8xf32, "sram"> -> memref<1x1x4x4xf32, "sram">
  func.return
}
// CHECK:      parse_errors.mlir:16:20: error: Expected `max`.
// CHECK-NEXT:   npu_compute.pool avg %a -> %o
// CHECK-NEXT:                    ^^^
