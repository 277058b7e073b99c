// RUN: not npu-opt %s -p 'npu-dma-order{disable=sink-everything}' 2>&1 | filecheck %s

// The `disable` option names patterns; an unknown name is an error listing them.
builtin.module {
  func.func @main() {
    func.return
  }
}
// CHECK: error: npu-dma-order: cannot disable unknown pattern(s) sink-everything (patterns: fold-one-trip-loop, sink-wait, order-loads)
