// RUN: not npu-opt %s -p 'npu-schedule{max-cores=-1}' 2>&1 | filecheck %s
builtin.module {
  func.func @main() {
    func.return
  }
}
// CHECK: error: npu-schedule: max-cores must be >= 0, got -1
