// RUN: %opt %s -p npu-tile,npu-layer-group -o %t.mlir && filecheck %s < %t.mlir

// A rank-0 weight (an ONNX scalar: the importer keeps it 0-d in the store) packs like
// any other: no DMA of its own (one would hold a channel for dma_latency cycles).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>, npu.weights = "Inputs/weights.npz"} {
  func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
    %w1 = npu_graph.constant {weight = "w1"} : tensor<64x64xf32>
    %s = npu_graph.constant {weight = "s"} : tensor<f32>
    %w2 = npu_graph.constant {weight = "w2"} : tensor<64x64xf32>
    %a = npu_graph.matmul %x, %w1 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> loc("fc1")
    %h = npu_graph.mul %a, %s : (tensor<4x64xf32>, tensor<f32>) -> tensor<4x64xf32> loc("scale")
    %b = npu_graph.matmul %h, %w2 : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32> loc("fc2")
    func.return %b : tensor<4x64xf32>
  }
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:     weight = "s"
// CHECK:         %[[P:.*]] = npu_graph.constant {weight = "fc1.pack0"} : tensor<8208xf32>
// CHECK-NEXT:    npu_tile.kernel "fc1..fc2"(%x, %[[P]]) group
// CHECK:           %[[A:.*]] = npu_graph.matmul
// CHECK-NEXT:      %[[S:.*]] = npu_graph.slice %{{.*}} {starts = array<i64: 4096>, ends = array<i64: 4097>, steps = array<i64: 1>} : (tensor<8208xf32>) -> tensor<1xf32>
// CHECK-NEXT:      %[[C:.*]] = npu_graph.reshape %[[S]] : (tensor<1xf32>) -> tensor<f32>
// CHECK-NEXT:      npu_graph.mul %[[A]], %[[C]]
