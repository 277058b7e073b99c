// RUN: %opt %s -p npu-tile --remarks -o /dev/null 2>&1 | filecheck %s

// A kernel with an element gather is named as a slow path (a missed remark after its
// tiling); a matmul kernel is not.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>, %i: tensor<6xf32>) -> tensor<4x6xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x32xf32>
    %g = npu_graph.gemm %x, %w {trans_b = true} : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32> loc("fc")
    %y = npu_graph.gather %g, %i {axis = 1 : i64} : (tensor<4x16xf32>, tensor<6xf32>) -> tensor<4x6xf32> loc("pick")
    func.return %y : tensor<4x6xf32>
  }
}
// CHECK:      remark: npu-tile: applied: [fc] kernel
// CHECK-NOT:  slow path
// CHECK:      remark: npu-tile: applied: [pick] kernel
// CHECK-NEXT: remark: npu-tile: missed: [pick] kernel '{{.*}}': slow path: 'npu_graph.gather' is an element gather on the vector unit
// CHECK-NOT:  slow path
