// RUN: %opt %s -p npu-tile,npu-layer-group -o %t.mlir && filecheck %s < %t.mlir

// Weights only the group reads are packed into one DRAM constant (one DMA for
// both 16 KiB matrices: packs grow up to dma_latency x dram_bw = 25,600 bytes);
// the body unpacks each with a 1-D slice and a reshape just before its first use.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>, npu.weights = "Inputs/weights.npz"} {
  func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<64x64xf32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<64x64xf32>
    %a = npu_graph.matmul %x, %w1 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> loc("fc1")
    %h = npu_graph.relu %a : (tensor<4x64xf32>) -> tensor<4x64xf32> loc("act1")
    %b = npu_graph.matmul %h, %w2 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> loc("fc2")
    func.return %b : tensor<4x64xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:     weight = "w1"
// CHECK:         %[[P:.*]] = npu_graph.constant {weight = "fc1.pack0"} : tensor<8192xf32>
// CHECK-NEXT:    npu_tile.kernel "fc1..fc2"(%x, %[[P]]) group
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<4x64xf32>, %[[PA:.*]]: tensor<8192xf32>):
// CHECK-NEXT:      %[[S1:.*]] = npu_graph.slice %[[PA]] {starts = array<i64: 0>, ends = array<i64: 4096>, steps = array<i64: 1>}
// CHECK-NEXT:      %[[W1:.*]] = npu_graph.reshape %[[S1]] : (tensor<4096xf32>) -> tensor<64x64xf32>
// CHECK-NEXT:      %[[A:.*]] = npu_graph.matmul %[[X]], %[[W1]]
// CHECK-NEXT:      %[[H:.*]] = npu_graph.relu %[[A]]
// CHECK-NEXT:      %[[S2:.*]] = npu_graph.slice %[[PA]] {starts = array<i64: 4096>, ends = array<i64: 8192>, steps = array<i64: 1>}
// CHECK-NEXT:      %[[W2:.*]] = npu_graph.reshape %[[S2]]
// CHECK-NEXT:      npu_graph.matmul %[[H]], %[[W2]]
