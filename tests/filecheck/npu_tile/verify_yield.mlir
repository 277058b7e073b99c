// RUN: %opt %s --allow-unregistered-dialect --verify-diagnostics | filecheck %s
// npu_tile.yield only terminates an npu_tile.kernel body.
builtin.module {
  "test.region"() ({
    npu_tile.yield
  }) : () -> ()
}
// CHECK: 'npu_tile.yield' must be inside 'npu_tile.kernel'
