// RUN: not npu-opt %s -p 'npu-task-canonicalize{disable=hoist-everything}' 2>&1 | filecheck %s

// The `disable` option names patterns; an unknown name is an error listing them.
builtin.module {
  func.func @main() {
    func.return
  }
}
// CHECK: error: npu-task-canonicalize: cannot disable unknown pattern(s) hoist-everything (patterns: collapse-invariant-slots, hoist-invariant-load, merge-adjacent-copies, remove-redundant-wait, fold-identity-view)
