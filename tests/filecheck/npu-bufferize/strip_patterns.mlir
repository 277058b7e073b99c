// RUN: %opt %s --split-input-file --verify-diagnostics -p npu-tile-loops,npu-bufferize | filecheck %s
// RUN: npu-opt %s --split-input-file --verify-diagnostics -p npu-bufferize | filecheck %s --check-prefix=ERR

// The strip patterns of lowering/buffer/strip_patterns.py, one case each.
// StripLoopToFor: the strip loop -> scf.for over the task's strips [lo, hi), no
// iter_args (no line buffers). SideLoadToCopy: the residual's 4 rows at 4s into its
// slot; StripLoadToCopy: the input's 6 rows from 4s - 1 into its slot, padded with 0
// (issued after the residual's: smallest first); both waited for before the conv. StageStripOp: the conv padded along W only, the add on the
// slot buffers. StripStoreToCopy: the 4 rows stored at 4s, clipped. Must not fire:
// MaskRows (no value a padded conv reads has rows outside the tensor: the input is padded
// by its load), PrefetchStrips (no prefetch: one loop, no selects).
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x16x16xf32>, %q: tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<8x8x3x3xf32>
    %d = npu_tile.kernel "conv..res"(%x, %w, %q) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 4>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, plan = #npu_tile.strip<rows = 4, strips = 4, halo = [1, 1], sram = 9472>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
    ^bb0(%a: tensor<1x8x16x16xf32>, %b: tensor<8x8x3x3xf32>, %r: tensor<1x8x16x16xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
      %t = npu_graph.add %c, %r : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
      npu_tile.yield %t : tensor<1x8x16x16xf32>
    }
    func.return %d : tensor<1x8x16x16xf32>
  }
}

// CHECK:      npu_task.task "conv..res" attributes {core = 0 : i64, range = array<i64: 0, 4>
// CHECK-NEXT: ^{{.*}}(%[[LO:.*]]: index, %[[HI:.*]]: index):
// CHECK:        %[[XS:.*]] = npu_task.sram {{.*}} : memref<1x8x6x16xf32, "sram">
// CHECK-NEXT:   %[[QS:.*]] = npu_task.sram {{.*}} : memref<1x8x4x16xf32, "sram">
// CHECK-NEXT:   %[[CS:.*]] = npu_task.sram {{.*}} : memref<1x8x4x16xf32, "sram">
// CHECK-NEXT:   %[[TS:.*]] = npu_task.sram {{.*}} : memref<1x8x4x16xf32, "sram">
// CHECK-NEXT:   scf.for %[[S:.*]] = %[[LO]] to %[[HI]] step %{{.*}} {
// CHECK-NOT:      arith.select
// CHECK:          %[[QT:.*]] = npu_dma.copy %{{.*}} -> %[[QS]]{{.*}} {sizes = array<i64: 1, 8, 4, 16>, pad_value = 0.000000e+00 : f32}
// CHECK:          %[[XT:.*]] = npu_dma.copy %{{.*}} -> %[[XS]]{{.*}} {sizes = array<i64: 1, 8, 6, 16>, pad_value = 0.000000e+00 : f32}
// CHECK-NEXT:     npu_dma.wait %[[QT]]
// CHECK-NEXT:     npu_dma.wait %[[XT]]
// CHECK-NEXT:     npu_compute.conv2d %[[XS]], %{{.*}} -> %[[CS]] {{.*}}pads = array<i64: 0, 1, 0, 1>}
// CHECK-NEXT:     npu_compute.eltwise add %[[CS]], %[[QS]] -> %[[TS]]
// CHECK-NOT:      scf.if
// CHECK:          npu_dma.copy %[[TS]]{{.*}} {sizes = array<i64: 1, 8, 4, 16>, clip}
// CHECK:        }
// CHECK-NEXT: }

// -----

// PrefetchStrips fires (prefetch): strip lo's input and residual rows land in slot 0
// before the loop; each strip issues the next one's into the other slot, waits for its
// own (loop-carried) and computes on the slot its parity selects; the last strip is peeled.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x16x16xf32>, %q: tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<8x8x3x3xf32>
    %d = npu_tile.kernel "conv..res"(%x, %w, %q) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 4>, double_buffer = true, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, plan = #npu_tile.strip<rows = 4, strips = 4, halo = [1, 1], sram = 14592, prefetch>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
    ^bb0(%a: tensor<1x8x16x16xf32>, %b: tensor<8x8x3x3xf32>, %r: tensor<1x8x16x16xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
      %t = npu_graph.add %c, %r : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
      npu_tile.yield %t : tensor<1x8x16x16xf32>
    }
    func.return %d : tensor<1x8x16x16xf32>
  }
}

// CHECK:      npu_task.task "conv..res"
// CHECK:        %[[X0:.*]] = npu_task.sram {{.*}} : memref<1x8x6x16xf32, "sram">
// CHECK-NEXT:   %[[X1:.*]] = npu_task.sram {{.*}} : memref<1x8x6x16xf32, "sram">
// CHECK:        %[[T0:.*]] = npu_dma.copy %{{.*}} -> %[[X0]]
// CHECK:        %[[LAST:.*]] = arith.subi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:   %{{.*}}, %{{.*}} = scf.for %[[S:.*]] = %{{.*}} to %[[LAST]] step %{{.*}} iter_args(%{{[0-9]+}} = %{{[0-9]+}}, %[[A:[0-9]+]] = %[[T0]]) -> (!npu_dma.token, !npu_dma.token) {
// CHECK:          %[[CUR:.*]] = arith.select %[[ODD:.*]], %[[X1]], %[[X0]]
// CHECK:          %[[NXT:.*]] = arith.select %[[ODD]], %[[X0]], %[[X1]]
// CHECK:          npu_dma.copy %{{.*}} -> %[[NXT]]
// CHECK:          npu_dma.wait %[[A]]
// CHECK:          npu_compute.conv2d %[[CUR]]
// CHECK:          scf.yield
// CHECK:        npu_dma.wait
// CHECK:        arith.select
// CHECK:        npu_compute.conv2d
// CHECK:        npu_dma.copy {{.*}}clip}

// -----

// MaskRows fires: the 1x1 conv's rows a strip holds outside the tensor (strips 0 and 3)
// are what the padded 3x3 conv reads: multiplied by the mask (0 outside) in those strips.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x16x16xf32>, %w1: tensor<8x8x1x1xf32>, %w3: tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32> {
    %d = npu_tile.kernel "c1..c3"(%x, %w1, %w3) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 4>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, plan = #npu_tile.strip<rows = 4, strips = 4, halo = [1, 1], sram = 10816>} : (tensor<1x8x16x16xf32>, tensor<8x8x1x1xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32> {
    ^bb0(%a: tensor<1x8x16x16xf32>, %b: tensor<8x8x1x1xf32>, %c: tensor<8x8x3x3xf32>):
      %e = npu_graph.conv2d %a, %b : (tensor<1x8x16x16xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x16x16xf32>
      %t = npu_graph.conv2d %e, %c {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
      npu_tile.yield %t : tensor<1x8x16x16xf32>
    }
    func.return %d : tensor<1x8x16x16xf32>
  }
}

// CHECK:      %[[M:.*]] = npu_task.weight "inline1" {value = dense<[{{\[\[}}[0.000000e+00], [1.000000e+00],
// CHECK:      npu_task.task "c1..c3"
// CHECK:        %[[MS:.*]] = npu_task.sram {{.*}} : memref<1x1x6x1xf32, "sram">
// CHECK-NEXT:   %[[ES:.*]] = npu_task.sram {{.*}} : memref<1x8x6x16xf32, "sram">
// CHECK:        scf.for %[[S:.*]] =
// CHECK:          npu_dma.copy %[[M]]{{.*}} -> %[[MS]]
// CHECK:          npu_compute.conv2d %{{.*}} -> %[[ES]]
// CHECK-NEXT:     %[[BELOW:.*]] = arith.cmpi slt, %[[S]], %{{.*}} : index
// CHECK-NEXT:     %[[PAST:.*]] = arith.cmpi sge, %[[S]], %{{.*}} : index
// CHECK-NEXT:     %[[EDGE:.*]] = arith.ori %[[BELOW]], %[[PAST]] : i1
// CHECK-NEXT:     scf.if %[[EDGE]] {
// CHECK-NEXT:       npu_compute.eltwise mul %[[ES]], %[[MS]] -> %[[ES]]
// CHECK-NEXT:     }
// CHECK-NEXT:     npu_compute.conv2d %[[ES]]

// -----

// ShiftLineBuffers fires (line buffers, npu-bufferize/line_buffers.mlir): the input's
// load first waits for its shift in flight; the relu's new rows move into rows 2-3 of
// its line buffer after that buffer's shift. StripLoopToFor carries the shifts and starts
// warm = 2 strips early; StripStoreToCopy stores only from strip lo on.
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

// CHECK:      npu_task.task "c0..c1"
// CHECK-NEXT: ^{{.*}}(%[[LO:.*]]: index, %[[HI:.*]]: index):
// CHECK:        %[[XB:.*]] = npu_task.sram {{.*}} : memref<1x8x4x16xf32, "sram">
// CHECK:        %[[RB:.*]] = npu_task.sram {{.*}} : memref<1x8x4x16xf32, "sram">
// CHECK:        %[[START:.*]] = arith.subi %[[LO]], %{{.*}} : index
// CHECK:        scf.for %[[S:.*]] = %[[START]] to %[[HI]] step %{{.*}} iter_args(%[[SX:.*]] = %{{.*}}, %[[SR:.*]] = %{{.*}})
// CHECK-NEXT:     npu_dma.wait %[[SX]]
// CHECK:          npu_dma.copy %{{.*}} -> %[[XB]]
// CHECK:          npu_dma.wait %[[SR]]
// CHECK-NEXT:     %[[INS:.*]] = npu_dma.copy %{{.*}} -> %[[RB]]
// CHECK-NEXT:     npu_dma.wait %[[INS]]
// CHECK:          arith.cmpi sge, %[[S]], %[[LO]] : index

// -----

// Error: a strip group npu-tile-loops has not put in its strip loop.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x8x16x16xf32>, %q: tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<8x8x3x3xf32>
    %d = npu_tile.kernel "raw"(%x, %w, %q) group {loops = ["h"], tile = array<i64: 4>, grid = array<i64: 4>, double_buffer = false, sram_bytes = 0 : i64, predicted_cycles = 0 : i64, plan = #npu_tile.strip<rows = 4, strips = 4, halo = [1, 1], sram = 9472>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
    ^bb0(%a: tensor<1x8x16x16xf32>, %b: tensor<8x8x3x3xf32>, %r: tensor<1x8x16x16xf32>):
      %c = npu_graph.conv2d %a, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x16x16xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x16x16xf32>
      %t = npu_graph.add %c, %r : (tensor<1x8x16x16xf32>, tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
      npu_tile.yield %t : tensor<1x8x16x16xf32>
    }
    func.return %d : tensor<1x8x16x16xf32>
  }
}
// ERR: error: npu-bufferize: kernel 'raw': the strip group has no strip loop (run npu-tile-loops first) at 'npu_tile.kernel'
