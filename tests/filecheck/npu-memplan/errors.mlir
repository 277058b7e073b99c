// RUN: %opt %s -p npu-memplan --verify-diagnostics -o /dev/null

// An in-place mark must name another activation buffer (here: the model input).
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">) {
    // expected-error @+1 {{'npu_task.alloc': reuse must name another 'npu_task.alloc'}}
    %b = npu_task.alloc reuse(%x : memref<64xf32, "dram">) : memref<64xf32, "dram">
    func.return
  }
}
