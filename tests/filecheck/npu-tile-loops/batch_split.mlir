// RUN: %opt %s -p npu-tile,npu-layer-group,npu-tile-loops -o %t.mlir && filecheck %s < %t.mlir

// A batch-split group (loops ["n"]: 4 slices of 2 images) keeps its whole-batch body:
// npu-tile-loops loads each input whole ahead of the op its schedule issues it before,
// scheduled as its plan is - on one slice - and the plan's offsets follow the ops
// (npu-bufferize loads each slice's rows of %x).
builtin.module {
  func.func @main(%x: tensor<8x1x28x28xf32>) -> tensor<8x6x14x14xf32> {
    %w = npu_graph.constant {value = dense<0.04> : tensor<6x1x5x5xf32>} : tensor<6x1x5x5xf32>
    %b = npu_graph.constant {value = dense<-0.1> : tensor<6xf32>} : tensor<6xf32>
    %c = npu_graph.conv2d %x, %w, %b {pads = array<i64: 2, 2, 2, 2>} : (tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32>, tensor<6xf32>) -> tensor<8x6x28x28xf32> loc("conv")
    %r = npu_graph.relu %c : (tensor<8x6x28x28xf32>) -> tensor<8x6x28x28xf32> loc("relu")
    %p = npu_graph.maxpool %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<8x6x28x28xf32>) -> tensor<8x6x14x14xf32> loc("pool")
    func.return %p : tensor<8x6x14x14xf32>
  }
}
// CHECK:      npu_tile.kernel "conv..pool"(%x, %{{.*}}) group {loops = ["n"], tile = array<i64: 2>, grid = array<i64: 4>, {{.*}}plan = #npu_tile.group<sram = {{[0-9]+}}, offsets = [{{.*}}], in_place = [5]>}
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: tensor<8x1x28x28xf32>, %[[PK:.*]]: tensor<166xf32>):
// CHECK-NEXT:   %[[LX:.*]] = npu_tile.load %[[X]]()[0, 0, 0, 0] sizes [8, 1, 28, 28]
// CHECK-NEXT:   %[[LW:.*]] = npu_tile.load %[[PK]]()[0] sizes [166]
// CHECK:        npu_graph.conv2d %[[LX]]
// CHECK:        npu_graph.maxpool
// CHECK-NEXT:   npu_tile.yield
