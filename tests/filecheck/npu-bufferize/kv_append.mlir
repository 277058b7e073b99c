// RUN: %opt %s -p npu-fuse,npu-tile,npu-tile-loops,npu-bufferize | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// The KV-cache append (npu-fuse's `kv-append`, see npu-tile-loops/kv_append.mlir):
// each key block's two zero-padded loads, past rows and new rows, land in one slot
// (`src_clip`: each copy writes only its rows inside its source, together they
// fill the block), the new rows only at the step whose block reaches them (an
// `scf.if` on the window's start: the last block here), so no add runs. The slot
// goes to the present cache (`clip` copies into outputs %6 and %7) while the
// attention computes from it; both copies are awaited at the end of the step.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 16384>} {
  func.func @main(%q: tensor<2x4x1x32xf32>, %pk: tensor<2x4x63x32xf32>, %nk: tensor<2x4x1x32xf32>, %pv: tensor<2x4x63x32xf32>, %nv: tensor<2x4x1x32xf32>) -> (tensor<2x4x1x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) attributes {npu.inputs = ["q", "past_key", "new_key", "past_value", "new_value"], npu.outputs = ["o", "present_key", "present_value"]} {
    %k = npu_graph.concat %pk, %nk {axis = 2 : i64} : (tensor<2x4x63x32xf32>, tensor<2x4x1x32xf32>) -> tensor<2x4x64x32xf32> loc("k")
    %v = npu_graph.concat %pv, %nv {axis = 2 : i64} : (tensor<2x4x63x32xf32>, tensor<2x4x1x32xf32>) -> tensor<2x4x64x32xf32> loc("v")
    %o = npu_graph.attention %q, %k, %v {scale = 0.176776692 : f32, key_rows} : (tensor<2x4x1x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) -> tensor<2x4x1x32xf32> loc("attn")
    func.return %o, %k, %v : tensor<2x4x1x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>
  }
}
// CHECK:      func.func @main(%[[Q:.*]]: memref<2x4x1x32xf32, "dram">, %[[PK:.*]]: memref<2x4x63x32xf32, "dram">, %[[NK:.*]]: memref<2x4x1x32xf32, "dram">, %[[PV:.*]]: memref<2x4x63x32xf32, "dram">, %[[NV:.*]]: memref<2x4x1x32xf32, "dram">, %[[O:.*]]: memref<2x4x1x32xf32, "dram">, %[[OK:.*]]: memref<2x4x64x32xf32, "dram">, %[[OV:.*]]: memref<2x4x64x32xf32, "dram">)
// CHECK:        %[[KS:.*]] = npu_task.sram {offset = 0 : i64} : memref<1x2x16x32xf32, "sram">
// CHECK-NEXT:   %[[VS:.*]] = npu_task.sram {offset = 4096 : i64} : memref<1x2x16x32xf32, "sram">
// CHECK-NOT:    npu_task.sram {{.*}} memref<1x2x16x32xf32, "sram">
// CHECK:        scf.for
// CHECK:          npu_dma.copy %[[PK]][{{.*}}] -> %[[KS]][{{.*}}] {sizes = array<i64: 1, 2, 16, 32>, src_clip}
// CHECK:          npu_dma.copy %[[PV]][{{.*}}] -> %[[VS]][{{.*}}] {sizes = array<i64: 1, 2, 16, 32>, src_clip}
// CHECK:          %[[START:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:     %[[BEFORE:.*]] = arith.cmpi slt, %[[START]], %{{.*}} : index
// CHECK-NEXT:     %[[END:.*]] = arith.addi %[[START]], %{{.*}} : index
// CHECK-NEXT:     %[[AFTER:.*]] = arith.cmpi sgt, %[[END]], %{{.*}} : index
// CHECK-NEXT:     %[[HIT:.*]] = arith.andi %[[BEFORE]], %[[AFTER]] : i1
// CHECK-NEXT:     scf.if %[[HIT]] {
// CHECK:            %[[C:.*]] = npu_dma.copy %[[NK]][{{.*}}] -> %[[KS]][{{.*}}] {sizes = array<i64: 1, 2, 16, 32>, src_clip}
// CHECK-NEXT:       npu_dma.wait %[[C]]
// CHECK-NEXT:     }
// CHECK:          %[[TK:.*]] = npu_dma.copy %[[KS]][{{.*}}] -> %[[OK]][{{.*}}] {sizes = array<i64: 1, 2, 16, 32>, clip}
// CHECK:          npu_dma.copy %[[NV]][{{.*}}] -> %[[VS]][{{.*}}] {sizes = array<i64: 1, 2, 16, 32>, src_clip}
// CHECK:          %[[TV:.*]] = npu_dma.copy %[[VS]][{{.*}}] -> %[[OV]][{{.*}}] {sizes = array<i64: 1, 2, 16, 32>, clip}
// CHECK-NOT:      npu_compute.eltwise
// CHECK:          npu_compute.apply "npu_graph.attention" %{{.*}}, %[[KS]], %[[VS]]
// CHECK:          npu_dma.wait %[[TK]]
// CHECK-NEXT:     npu_dma.wait %[[TV]]
// CHECK-NEXT:   }

// SIM: check:       ok vs numpy float64 reference
