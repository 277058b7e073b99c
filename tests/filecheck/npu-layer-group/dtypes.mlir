// RUN: %opt %s --split-input-file -p npu-tile,npu-layer-group -o %t.mlir && filecheck %s < %t.mlir

// strips.mlir's stem in f16 with half its SRAM (16 KiB): every strip buffer is half
// the bytes, so the plan is the same (2 pooled rows a strip, 8 strips) in about half
// the SRAM (12224 bytes; f32: 24256 in 32 KiB) and the group moves exactly half the
// DRAM bytes (f32: 92736).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x8x32x32xf16>) -> tensor<1x16x16x16xf16> {
    %w = npu_graph.constant {weight = "w"} : tensor<16x8x3x3xf16>
    %b = npu_graph.constant {weight = "b"} : tensor<16xf16>
    %c = npu_graph.conv2d %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf16>, tensor<16x8x3x3xf16>, tensor<16xf16>) -> tensor<1x16x32x32xf16> loc("conv")
    %r = npu_graph.relu %c : (tensor<1x16x32x32xf16>) -> tensor<1x16x32x32xf16> loc("relu")
    %p = npu_graph.maxpool %r {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x16x32x32xf16>) -> tensor<1x16x16x16xf16> loc("pool")
    func.return %p : tensor<1x16x16x16xf16>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %p = npu_tile.kernel "conv..pool"(%x, %w, %b) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 8>, sram_bytes = 12224 : i64, {{.*}}dram_bytes = 46368 : i64, {{.*}}plan = #npu_tile.strip<rows = 2, strips = 8, halo = [2, 1], sram = 12224>}
// CHECK-NEXT:  ^{{.*}}(%{{.*}}: tensor<1x8x32x32xf16>, %{{.*}}: tensor<16x8x3x3xf16>, %{{.*}}: tensor<16xf16>):

// -----

// packing.mlir in f16: the pack is an f16 constant, its members' offsets in f16
// elements (the second matrix starts 8192 bytes in: element 4096).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {
    %w1 = npu_graph.constant {value = dense<0.5> : tensor<64x64xf16>} : tensor<64x64xf16>
    %w2 = npu_graph.constant {value = dense<0.25> : tensor<64x64xf16>} : tensor<64x64xf16>
    %a = npu_graph.matmul %x, %w1 : (tensor<4x64xf16>, tensor<64x64xf16>) -> tensor<4x64xf16> loc("fc1")
    %h = npu_graph.relu %a : (tensor<4x64xf16>) -> tensor<4x64xf16> loc("act1")
    %b = npu_graph.matmul %h, %w2 : (tensor<4x64xf16>, tensor<64x64xf16>) -> tensor<4x64xf16> loc("fc2")
    func.return %b : tensor<4x64xf16>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:         %[[P:.*]] = npu_graph.constant {weight = "fc1.pack0"} : tensor<8192xf16>
// CHECK-NEXT:    npu_tile.kernel "fc1..fc2"(%x, %[[P]]) group {{{.*}}dram_bytes = 17408 : i64
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: tensor<4x64xf16>, %[[PA:.*]]: tensor<8192xf16>):
// CHECK-NEXT:      npu_graph.slice %[[PA]] {starts = array<i64: 0>, ends = array<i64: 4096>, steps = array<i64: 1>} : (tensor<8192xf16>) -> tensor<4096xf16>
// CHECK:           npu_graph.slice %[[PA]] {starts = array<i64: 4096>, ends = array<i64: 8192>, steps = array<i64: 1>} : (tensor<8192xf16>) -> tensor<4096xf16>

// -----

// A pack holds one element type (it is one tensor in DRAM): the i8 matrix travels
// apart, and the dequantize's two f32 scalars join the f32 matrix's pack though the i8
// one is read between them (one open pack per element type).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %w1 = npu_graph.constant {value = dense<0.5> : tensor<64x64xf32>} : tensor<64x64xf32>
    %wq = npu_graph.constant {value = dense<3> : tensor<64x64xi8>} : tensor<64x64xi8>
    %s = npu_graph.constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
    %a = npu_graph.matmul %x, %w1 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> loc("fc1")
    %h = npu_graph.relu %a : (tensor<4x64xf32>) -> tensor<4x64xf32> loc("act1")
    %wd = npu_graph.dequantize %wq, %s, %z : (tensor<64x64xi8>, tensor<f32>, tensor<f32>) -> tensor<64x64xf32> loc("dq")
    %b = npu_graph.matmul %h, %wd : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> loc("fc2")
    func.return %b : tensor<4x64xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:         %[[P:.*]] = npu_graph.constant {weight = "fc1.pack0"} : tensor<4113xf32>
// CHECK-NEXT:    npu_tile.kernel "fc1..fc2"(%x, %[[P]], %wq) group
// CHECK-SAME:      (tensor<4x64xf32>, tensor<4113xf32>, tensor<64x64xi8>) -> tensor<4x64xf32>
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: tensor<4x64xf32>, %[[PA:.*]]: tensor<4113xf32>, %{{.*}}: tensor<64x64xi8>):
// CHECK-NEXT:      npu_graph.slice %[[PA]] {starts = array<i64: 0>, ends = array<i64: 4096>
// CHECK:           npu_graph.slice %[[PA]] {starts = array<i64: 4096>, ends = array<i64: 4097>

// -----

// A quantized strip group (what npu-fuse-qdq leaves of a QDQ conv -> relu -> conv): ui8
// values, i32 accumulators, requantize parameters constant over H and W. Its rows cost a
// quarter of f32's, so 2 output rows a strip fit 16 KiB with both convs' halos.
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 16384>} {
  func.func @main(%x: tensor<1x8x32x32xui8>) -> tensor<1x8x32x32xui8> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<16x8x3x3xi8>
    %b1 = npu_graph.constant {weight = "b1"} : tensor<16xi32>
    %m1 = npu_graph.constant {weight = "m1"} : tensor<1x16x1x1xf32>
    %z = npu_graph.constant {value = dense<128.0> : tensor<f32>} : tensor<f32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<8x16x3x3xi8>
    %m2 = npu_graph.constant {weight = "m2"} : tensor<1x8x1x1xf32>
    %c1 = npu_graph.conv2d %x, %w1, %b1 {pads = array<i64: 1, 1, 1, 1>, input_zero_point = 128 : i64, weight_zero_point = 0 : i64} : (tensor<1x8x32x32xui8>, tensor<16x8x3x3xi8>, tensor<16xi32>) -> tensor<1x16x32x32xi32> loc("conv1")
    %q1 = npu_graph.requantize %c1, %m1, %z {min = 128 : i64} : (tensor<1x16x32x32xi32>, tensor<1x16x1x1xf32>, tensor<f32>) -> tensor<1x16x32x32xui8> loc("rq1")
    %c2 = npu_graph.conv2d %q1, %w2 {pads = array<i64: 1, 1, 1, 1>, input_zero_point = 128 : i64, weight_zero_point = 0 : i64} : (tensor<1x16x32x32xui8>, tensor<8x16x3x3xi8>) -> tensor<1x8x32x32xi32> loc("conv2")
    %q2 = npu_graph.requantize %c2, %m2, %z : (tensor<1x8x32x32xi32>, tensor<1x8x1x1xf32>, tensor<f32>) -> tensor<1x8x32x32xui8> loc("rq2")
    func.return %q2 : tensor<1x8x32x32xui8>
  }
}
// CHECK-LABEL: func.func @main
// CHECK:       %q2 = npu_tile.kernel "conv1..rq2"(%x, %w1, %b1, %m1, %z, %w2, %m2) group {{{.*}}plan = #npu_tile.strip<rows = 2, strips = 16, halo = [2, 2], sram = 14464>}
// CHECK-NEXT:  ^{{.*}}(%{{.*}}: tensor<1x8x32x32xui8>, %{{.*}}: tensor<16x8x3x3xi8>, %{{.*}}: tensor<16xi32>, %{{.*}}: tensor<1x16x1x1xf32>, %{{.*}}: tensor<f32>, %{{.*}}: tensor<8x16x3x3xi8>, %{{.*}}: tensor<1x8x1x1xf32>):
