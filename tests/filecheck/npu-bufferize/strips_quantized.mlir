// RUN: %opt %s -p npu-tile,npu-layer-group,npu-tile-loops,npu-bufferize -o %t.mlir && filecheck %s < %t.mlir

// A quantized strip group (npu-layer-group/dtypes.mlir's last case): the input's rows
// outside the tensor are loaded as the conv's zero point (128), the requantize's
// parameters are loaded once, and the intermediate's rows outside the tensor become the
// zero point by an integer max and min with ui8 masks (a product is not exact on
// integers): 128 outside, the type's bounds inside.
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
// CHECK:       npu_task.weight "inline2" {value = dense<{{\[\[\[\[}}128], [0], {{.*}}, [0], [128]]]]> : tensor<1x1x34x1xui8>}
// CHECK:       npu_task.weight "inline3" {value = dense<{{\[\[\[\[}}128], [255], {{.*}}, [255], [128]]]]> : tensor<1x1x34x1xui8>}
// CHECK:       npu_dma.copy %{{.*}} {sizes = array<i64: 1, 8, 6, 32>, pad_value = 1.280000e+02 : f32} : memref<1x8x32x32xui8, "dram"> -> memref<1x8x6x32xui8, "sram">
// CHECK:       npu_compute.conv2d %[[X:.*]], %{{.*}} -> %[[ACC:.*]] {{{.*}}input_zero_point = 128 : i64{{.*}}} : memref<1x8x6x32xui8, "sram">, memref<16x8x3x3xi8, "sram"> -> memref<1x16x4x32xi32, "sram">
// CHECK-NEXT:  npu_compute.eltwise add %[[ACC]], %{{.*}} -> %[[ACC]] {cube_output} : memref<1x16x4x32xi32, "sram">, memref<1x16x1x1xi32, "sram">
// CHECK-NEXT:  npu_compute.apply "npu_graph.requantize" %[[ACC]], %{{.*}}, %{{.*}} -> %[[Q:.*]] {attrs = {min = 128 : i64}, cube_output} : memref<1x16x4x32xi32, "sram">, memref<1x16x1x1xf32, "sram">, memref<1x1x1x1xf32, "sram"> -> memref<1x16x4x32xui8, "sram">
// CHECK:       npu_compute.eltwise max %[[Q]], %{{.*}} -> %[[Q]] : memref<1x16x4x32xui8, "sram">, memref<1x1x4x1xui8, "sram">
// CHECK-NEXT:  npu_compute.eltwise min %[[Q]], %{{.*}} -> %[[Q]] : memref<1x16x4x32xui8, "sram">, memref<1x1x4x1xui8, "sram">
// CHECK:       npu_compute.conv2d %[[Q]], %{{.*}} {{{.*}}input_zero_point = 128 : i64
