// RUN: %opt %s --split-input-file -p npu-tile,npu-tile-loops | filecheck %s
// RUN: %opt %s --split-input-file -p npu-tile,npu-tile-loops,npu-bufferize | filecheck %s --check-prefix=BUF

// A matmul whose epilogue adds a bias and then a residual of the output's shape (a
// transformer's FFN2 or attention output): the sum over the k steps starts from the
// residual tile (`npu_tile.reduce ... init`), loaded into the accumulator at an
// output tile's first step, so it takes no SRAM slot of its own; only the bias add
// is left in the epilogue. Buffers: the init copy lands in the accumulator (the last
// buffer) at r == 0, and every step's product accumulates onto it.
// CHECK-LABEL: func.func @residual
// CHECK:         npu_tile.loop {loops = ["m", "n", "k"], tile = array<i64: 64, [[N:[0-9]+]], {{[0-9]+}}>, grid = array<i64: 1, {{[2-9]}}, {{[0-9]+}}>
// CHECK:           %[[R:.*]] = npu_tile.load %4(%m, %n, %k)[64 * %m, [[N]] * %n] sizes [64, [[N]]] : tensor<64x128xf32>
// CHECK-NEXT:      %[[P:.*]] = npu_graph.matmul
// CHECK-NEXT:      %[[S:.*]] = npu_tile.reduce %[[P]] init %[[R]] : tensor<64x[[N]]xf32>, tensor<64x[[N]]xf32> -> tensor<64x[[N]]xf32>
// CHECK-NEXT:      %[[B:.*]] = npu_tile.load %3
// CHECK-NEXT:      %[[Y:.*]] = npu_graph.add %[[S]], %[[B]]
// CHECK-NEXT:      npu_tile.store %[[Y]]
// BUF-LABEL: func.func @residual
// BUF:           npu_task.sram {offset = {{[0-9]+}} : i64} : memref<1x{{[0-9]+}}xf32, "sram">
// BUF-NEXT:      %[[ACC:.*]] = npu_task.sram {offset = {{[0-9]+}} : i64} : memref<64x{{[0-9]+}}xf32, "sram">
// BUF:           scf.if
// BUF-NEXT:        arith.muli
// BUF-NEXT:        %[[C:.*]] = npu_dma.copy %1[%{{.*}}, %{{.*}}] -> %[[ACC]]
// BUF-NEXT:        npu_dma.wait %[[C]]
// BUF-NEXT:      }
// BUF-NEXT:      npu_compute.matmul %{{.*}}, %{{.*}} -> %[[ACC]] {accumulate}
// BUF-NOT:       npu_compute.eltwise add %[[ACC]], %{{.*}} -> %[[ACC]] : memref<64x{{[0-9]+}}xf32, "sram">, memref<64x{{[0-9]+}}xf32, "sram">
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @residual(%a: tensor<64x512xf32>, %r: tensor<64x128xf32>) -> tensor<64x128xf32> {
    %w = npu_graph.constant {value = dense<0.5> : tensor<512x128xf32>} : tensor<512x128xf32>
    %b = npu_graph.constant {value = dense<0.25> : tensor<128xf32>} : tensor<128xf32>
    %0 = npu_graph.fused(%a, %w, %b, %r) {kernel = "ffn", rule = "matmul-epilogue"} : (tensor<64x512xf32>, tensor<512x128xf32>, tensor<128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32> {
    ^bb0(%x: tensor<64x512xf32>, %y: tensor<512x128xf32>, %z: tensor<128xf32>, %s: tensor<64x128xf32>):
      %1 = npu_graph.matmul %x, %y : (tensor<64x512xf32>, tensor<512x128xf32>) -> tensor<64x128xf32>
      %2 = npu_graph.add %1, %z : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
      %3 = npu_graph.add %2, %s : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
      npu_graph.yield %3 : tensor<64x128xf32>
    }
    func.return %0 : tensor<64x128xf32>
  }
}

// -----

// Must not start from the residual: a relu comes before its add (starting from it
// would put the residual through the relu).
// CHECK-LABEL: func.func @after_relu
// CHECK:         %[[S:.*]] = npu_tile.reduce %{{[0-9]+}} : tensor
// CHECK:         npu_graph.relu %[[S]]
// CHECK:         npu_graph.add
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @after_relu(%a: tensor<64x512xf32>, %r: tensor<64x128xf32>) -> tensor<64x128xf32> {
    %w = npu_graph.constant {value = dense<0.5> : tensor<512x128xf32>} : tensor<512x128xf32>
    %0 = npu_graph.fused(%a, %w, %r) {kernel = "ffn", rule = "matmul-epilogue"} : (tensor<64x512xf32>, tensor<512x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32> {
    ^bb0(%x: tensor<64x512xf32>, %y: tensor<512x128xf32>, %s: tensor<64x128xf32>):
      %1 = npu_graph.matmul %x, %y : (tensor<64x512xf32>, tensor<512x128xf32>) -> tensor<64x128xf32>
      %2 = npu_graph.relu %1 : (tensor<64x128xf32>) -> tensor<64x128xf32>
      %3 = npu_graph.add %2, %s : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
      npu_graph.yield %3 : tensor<64x128xf32>
    }
    func.return %0 : tensor<64x128xf32>
  }
}

// -----

// Must not start from an operand that broadcasts (a bias row), nor from a residual
// read twice by the epilogue; with one reduction step (k whole) there is no sum to
// start (the residual is loaded with the step's loads).
// CHECK-LABEL: func.func @twice
// CHECK:         %[[S:.*]] = npu_tile.reduce %{{[0-9]+}} : tensor
// CHECK-LABEL: func.func @one_step
// CHECK:         npu_tile.loop {{.*}}grid = array<i64: 1, 1, 1>
// CHECK:         %[[S:.*]] = npu_tile.reduce %{{[0-9]+}} : tensor
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @twice(%a: tensor<64x512xf32>, %r: tensor<64x128xf32>) -> tensor<64x128xf32> {
    %w = npu_graph.constant {value = dense<0.5> : tensor<512x128xf32>} : tensor<512x128xf32>
    %0 = npu_graph.fused(%a, %w, %r) {kernel = "ffn", rule = "matmul-epilogue"} : (tensor<64x512xf32>, tensor<512x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32> {
    ^bb0(%x: tensor<64x512xf32>, %y: tensor<512x128xf32>, %s: tensor<64x128xf32>):
      %1 = npu_graph.matmul %x, %y : (tensor<64x512xf32>, tensor<512x128xf32>) -> tensor<64x128xf32>
      %2 = npu_graph.add %1, %s : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
      %3 = npu_graph.mul %2, %s : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
      npu_graph.yield %3 : tensor<64x128xf32>
    }
    func.return %0 : tensor<64x128xf32>
  }
  func.func @one_step(%a: tensor<16x32xf32>, %r: tensor<16x16xf32>) -> tensor<16x16xf32> {
    %w = npu_graph.constant {value = dense<0.5> : tensor<32x16xf32>} : tensor<32x16xf32>
    %0 = npu_graph.fused(%a, %w, %r) {kernel = "small", rule = "matmul-epilogue"} : (tensor<16x32xf32>, tensor<32x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> {
    ^bb0(%x: tensor<16x32xf32>, %y: tensor<32x16xf32>, %s: tensor<16x16xf32>):
      %1 = npu_graph.matmul %x, %y : (tensor<16x32xf32>, tensor<32x16xf32>) -> tensor<16x16xf32>
      %2 = npu_graph.add %1, %s : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
      npu_graph.yield %2 : tensor<16x16xf32>
    }
    func.return %0 : tensor<16x16xf32>
  }
}

// -----

// A conv (ResNet's second conv of a block): its sum over the input-channel steps
// starts from the shortcut, and only the relu is left after the reduce.
// CHECK-LABEL: func.func @conv_residual
// CHECK:         npu_tile.loop {loops = ["n", "co", "oh", "ow", "ci"]
// CHECK:           %[[R:.*]] = npu_tile.load %3(%n, %co, %oh, %ow, %ci)[0, 16 * %co, 8 * %oh, 8 * %ow] sizes [1, 16, 8, 8] : tensor<1x16x8x8xf32>
// CHECK-NEXT:      %[[P:.*]] = npu_graph.conv2d
// CHECK-NEXT:      %[[S:.*]] = npu_tile.reduce %[[P]] init %[[R]]
// CHECK-NEXT:      %[[Y:.*]] = npu_graph.relu %[[S]]
// CHECK-NEXT:      npu_tile.store %[[Y]]
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 16384>} {
  func.func @conv_residual(%x: tensor<1x64x8x8xf32>, %r: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
    %w = npu_graph.constant {value = dense<0.125> : tensor<16x64x3x3xf32>} : tensor<16x64x3x3xf32>
    %0 = npu_graph.fused(%x, %w, %r) {kernel = "block", rule = "conv-epilogue"} : (tensor<1x64x8x8xf32>, tensor<16x64x3x3xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
    ^bb0(%a: tensor<1x64x8x8xf32>, %b: tensor<16x64x3x3xf32>, %s: tensor<1x16x8x8xf32>):
      %1 = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x8x8xf32>, tensor<16x64x3x3xf32>) -> tensor<1x16x8x8xf32>
      %2 = npu_graph.add %1, %s : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
      %3 = npu_graph.relu %2 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
      npu_graph.yield %3 : tensor<1x16x8x8xf32>
    }
    func.return %0 : tensor<1x16x8x8xf32>
  }
}
