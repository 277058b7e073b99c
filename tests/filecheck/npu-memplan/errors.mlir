// RUN: not npu-opt %s -p npu-memplan 2>&1 | filecheck %s

// An in-place mark must name another activation buffer (here: the model input).
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">) {
    %b = npu_task.alloc reuse(%x : memref<64xf32, "dram">) : memref<64xf32, "dram">
    func.return
  }
}
// CHECK: 'npu_task.alloc': reuse must name another 'npu_task.alloc'
