// RUN: %opt %s -p npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// Two 3x3 convs (relu between) as a line-buffered strip group of 2 rows (`line_buffer`):
// the input and the relu each hold 4 rows per strip, 2 of them shared with the previous
// strip. A strip loads only the input's 2 new rows (into rows 2-3 of its buffer),
// computes the relu's 2 new rows apart and moves them into rows 2-3 of the relu's
// buffer; after the last reader of a buffer, its rows 2-3 move up to rows 0-1 for the
// next strip (a DMA in flight across iterations). Each task starts 2 strips early to
// fill the buffers and stores only from strip lo on; the relu's new rows are masked in
// the strips where they leave the tensor (s < 0 or s >= 7).
builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 12288>} {
  func.func @main(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
    %w0 = npu_graph.constant {weight = "w0"} : tensor<8x8x3x3xf32>
    %w1 = npu_graph.constant {weight = "w1"} : tensor<8x8x3x3xf32>
    %y = npu_tile.kernel "c0..c1"(%x, %w0, %w1) group {loops = ["h"], tile = array<i64: 2>, grid = array<i64: 8>, double_buffer = false, sram_bytes = 9792 : i64, predicted_cycles = 3432 : i64, dram_bytes = 23120 : i64, parts = 4 : i64, line_buffer, plan = #npu_tile.strip<rows = 2, strips = 8, halo = [0, 2], sram = 9792, line_buffer, warm = 2>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32> {
    ^bb0(%0: tensor<1x8x16x16xf32>, %1: tensor<8x8x3x3xf32>, %2: tensor<8x8x3x3xf32>):
      %a = npu_graph.conv2d %0, %1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
      %r = npu_graph.relu %a : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
      %y_1 = npu_graph.conv2d %r, %2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
      npu_tile.yield %y_1 : tensor<1x8x16x16xf32>
    }
    func.return %y : tensor<1x8x16x16xf32>
  }
}
// CHECK:       npu_task.task "c0..c1" attributes {core = 0 : i64, range = array<i64: 0, 8>
// CHECK-NEXT:  ^{{.*}}(%[[LO:.*]]: index, %[[HI:.*]]: index):
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C7:.*]] = arith.constant 7 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         %[[XB:.*]] = npu_task.sram {offset = {{[0-9]+}} : i64, value = {{[0-9]+}} : i64} : memref<1x8x4x16xf32, "sram">
// CHECK:         %[[NEW:.*]] = npu_task.sram {offset = [[ONEW:[0-9]+]] : i64, value = {{[0-9]+}} : i64} : memref<1x8x2x16xf32, "sram">
// CHECK-NEXT:    %[[RB:.*]] = npu_task.sram {offset = {{[0-9]+}} : i64, value = {{[0-9]+}} : i64} : memref<1x8x4x16xf32, "sram">
// CHECK-NEXT:    %[[OUT:.*]] = npu_task.sram {offset = [[ONEW]] : i64, value = {{[0-9]+}} : i64} : memref<1x8x2x16xf32, "sram">
// The relu's new rows overwrite the conv's in place: a new value at the same bytes.
// CHECK-NEXT:    %[[NEWR:.*]] = npu_task.sram {offset = [[ONEW]] : i64, value = {{[0-9]+}} : i64} : memref<1x8x2x16xf32, "sram">
// CHECK-NEXT:    %[[START:.*]] = arith.subi %[[LO]], %[[C2]] : index
// The first shifts have no rows to move: their source window lies below the buffer (row
// 4 of 4), so they pad the rows the first warm-up strip keeps with zeros.
// CHECK-NEXT:    %[[SX0:.*]] = npu_dma.copy %[[XB]][%[[C0]], %[[C0]], %[[C4]], %[[C0]]] -> %[[XB]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]] {sizes = array<i64: 1, 8, 2, 16>, pad_value = 0.000000e+00 : f32}
// CHECK-NEXT:    %[[SR0:.*]] = npu_dma.copy %[[RB]][%[[C0]], %[[C0]], %[[C4]], %[[C0]]] -> %[[RB]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]] {sizes = array<i64: 1, 8, 2, 16>, pad_value = 0.000000e+00 : f32}
// CHECK-NEXT:    %{{.*}}, %{{.*}} = scf.for %[[S:.*]] = %[[START]] to %[[HI]] step %{{.*}} iter_args(%[[SX:.*]] = %[[SX0]], %[[SR:.*]] = %[[SR0]])
// CHECK-NEXT:      npu_dma.wait %[[SX]]
// CHECK:           %[[XL:.*]] = npu_dma.copy %{{.*}}[%[[C0]], %[[C0]], %{{.*}}, %[[C0]]] -> %[[XB]][%[[C0]], %[[C0]], %[[C2]], %[[C0]]] {sizes = array<i64: 1, 8, 2, 16>, pad_value = 0.000000e+00 : f32}
// CHECK:           npu_compute.conv2d %[[XB]], %{{.*}} -> %[[NEW]] {{{.*}}pads = array<i64: 0, 1, 0, 1>}
// CHECK-NEXT:      %[[SX1:.*]] = npu_dma.copy %[[XB]][%[[C0]], %[[C0]], %[[C2]], %[[C0]]] -> %[[XB]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]]
// CHECK-NEXT:      npu_compute.eltwise relu %[[NEW]] -> %[[NEWR]]
// CHECK-NEXT:      %[[BELOW:.*]] = arith.cmpi slt, %[[S]], %[[C0]] : index
// CHECK-NEXT:      %[[PAST:.*]] = arith.cmpi sge, %[[S]], %[[C7]] : index
// CHECK-NEXT:      %[[EDGE:.*]] = arith.ori %[[BELOW]], %[[PAST]] : i1
// CHECK-NEXT:      scf.if %[[EDGE]] {
// CHECK-NEXT:        npu_compute.eltwise mul %[[NEWR]], %{{.*}} -> %[[NEWR]]
// CHECK:           npu_dma.wait %[[SR]]
// CHECK-NEXT:      %[[INS:.*]] = npu_dma.copy %[[NEWR]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]] -> %[[RB]][%[[C0]], %[[C0]], %[[C2]], %[[C0]]] {sizes = array<i64: 1, 8, 2, 16>}
// CHECK-NEXT:      npu_dma.wait %[[INS]]
// CHECK-NEXT:      npu_compute.conv2d %[[RB]], %{{.*}} -> %[[OUT]] {{{.*}}pads = array<i64: 0, 1, 0, 1>}
// CHECK-NEXT:      %[[SR1:.*]] = npu_dma.copy %[[RB]][%[[C0]], %[[C0]], %[[C2]], %[[C0]]] -> %[[RB]][%[[C0]], %[[C0]], %[[C0]], %[[C0]]]
// CHECK-NEXT:      %[[STORING:.*]] = arith.cmpi sge, %[[S]], %[[LO]] : index
// CHECK-NEXT:      scf.if %[[STORING]] {
// CHECK:             npu_dma.copy %[[OUT]]{{.*}} {sizes = array<i64: 1, 8, 2, 16>, clip}
// CHECK:           scf.yield %[[SX1]], %[[SR1]]
