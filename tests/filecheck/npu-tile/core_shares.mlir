// RUN: %opt %s -p npu-tile --remarks -o /dev/null --split-input-file 2>&1 | filecheck %s

// A structured op's rows are also tried in tiles that deal them out evenly to the
// cores: 197 softmax rows as 4 tiles of 50, one a core (powers of two alone: 7 tiles
// of 32, two rounds on some cores; or 64, 64, 64 and 5). The search takes them, and
// then runs them on one core: with its stores deferred a core streams the four
// DMA-bound tiles (predicted 9200) within the split margin of four cores (simulated
// 9,504 against 8,160 on four: a case the margin gives away).
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: tensor<197x512xf32>) -> tensor<197x512xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %y = npu_graph.softmax %x {axis = 1 : i64} : (tensor<197x512xf32>) -> tensor<197x512xf32> loc("sm")
    func.return %y : tensor<197x512xf32>
  }
}
// CHECK: remark: npu-tile: applied: [sm] kernel 'sm': tile {'d0': 50, 'd1': 512}, grid [4, 1], double buffered, {{.*}} on 1 core(s): predicted 9200 cycles

// -----

// 256 rows: the even share is the power of two 64; the search keeps its 32-row tiles
// (on one core, as above).
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: tensor<256x512xf32>) -> tensor<256x512xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %y = npu_graph.softmax %x {axis = 1 : i64} : (tensor<256x512xf32>) -> tensor<256x512xf32> loc("sm")
    func.return %y : tensor<256x512xf32>
  }
}
// CHECK: remark: npu-tile: applied: [sm] kernel 'sm': tile {'d0': 32, 'd1': 512}, grid [8, 1], double buffered, {{.*}} on 1 core(s)

// -----

// One core: no share to deal; 197 rows in powers of two.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<197x512xf32>) -> tensor<197x512xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %y = npu_graph.softmax %x {axis = 1 : i64} : (tensor<197x512xf32>) -> tensor<197x512xf32> loc("sm")
    func.return %y : tensor<197x512xf32>
  }
}
// CHECK: remark: npu-tile: applied: [sm] kernel 'sm': tile {'d0': {{1|2|4|8|16|32|64|128|197}}, 'd1': 512}, {{.*}} on 1 core(s)
