// RUN: %opt %s -p npu-tile | filecheck %s
// RUN: %opt %s -p npu-tile,npu-tile-loops | filecheck %s --check-prefix=LOOPS

// A per-channel lookup table in front of a 1x1 conv (conv-prologue): each input tile
// loads the rows of the [64, 256] table for its input channels with it and looks its
// values up before the product. SRAM for 16 of the 64 input channels at a time.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 12288>} {
  func.func @main(%x: tensor<1x64x16x16xi8>) -> tensor<1x32x16x16xi32> {
    %lut = npu_graph.constant {weight = "lut"} : tensor<64x256xi8>
    %w = npu_graph.constant {weight = "w"} : tensor<32x64x1x1xi8>
    %y = npu_graph.fused(%x, %lut, %w) {kernel = "conv", rule = "conv-prologue"} : (tensor<1x64x16x16xi8>, tensor<64x256xi8>, tensor<32x64x1x1xi8>) -> tensor<1x32x16x16xi32> {
    ^bb0(%a: tensor<1x64x16x16xi8>, %t: tensor<64x256xi8>, %b: tensor<32x64x1x1xi8>):
      %v = npu_graph.table %a, %t {axis = 1 : i64} : (tensor<1x64x16x16xi8>, tensor<64x256xi8>) -> tensor<1x64x16x16xi8>
      %acc = npu_graph.conv2d %v, %b : (tensor<1x64x16x16xi8>, tensor<32x64x1x1xi8>) -> tensor<1x32x16x16xi32>
      npu_graph.yield %acc : tensor<1x32x16x16xi32>
    }
    func.return %y : tensor<1x32x16x16xi32>
  }
}
// CHECK:      npu_tile.kernel "conv"(%x, %lut, %w) conv2d
// CHECK:        npu_graph.table
// CHECK-SAME:   {axis = 1 : i64}
// CHECK:        npu_graph.conv2d
// LOOPS:      %[[X:.*]] = npu_tile.load %0(%n, %co, %oh, %ow, %ci)[%n, [[CI:[0-9]+]] * %ci, {{.*}}] sizes [1, [[CI]], 16, 16]
// LOOPS:      %[[T:.*]] = npu_tile.load %1(%n, %co, %oh, %ow, %ci){{\[}}[[CI]] * %ci, 0] sizes {{\[}}[[CI]], 256] : tensor<64x256xi8>
// LOOPS:      npu_graph.table %[[X]], %[[T]] {axis = 1 : i64}
