// RUN: %opt %s -p npu-fuse,npu-tile,npu-tile-loops | filecheck %s
// RUN: %opt %s -p npu-fuse,npu-tile,npu-tile-loops,npu-bufferize | filecheck %s --check-prefix=BUF
// RUN: npu-run %s --check --sanitize 2>&1 | filecheck %s --check-prefix=SIM
// RUN: sed 's/cores = 4, sram_bytes = 16384/cores = 1, sram_bytes = 3072/' %s > %t.mlir
// RUN: npu-run %t.mlir --check --sanitize 2>&1 | filecheck %s --check-prefix=SIM

// `kv-append` over a float KV cache of a quantized model (npu-fuse took the quantizes
// of the pasts and the dequantizes of the presents): each step loads the float past
// block (zero-padded past the cache), adds the new rows' block dequantized by the
// past's scale, quantizes the sum for the attention, and dequantizes it for the
// present's tee (f32: the kernel's second and third results are float); the
// scalars load last, each input once. Bufferized, each of those tiles has a buffer of its own; the
// run matches the graph's reference with every read checked, also on one core with a
// head a step (two steps reusing those buffers).
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 16384>} {
  func.func @main(%q: tensor<1x2x1x8xi8>, %pk: tensor<1x2x7x8xf32>, %nk: tensor<1x2x1x8xi8>, %pv: tensor<1x2x7x8xf32>, %nv: tensor<1x2x1x8xi8>) -> (tensor<1x2x1x8xi8>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) attributes {npu.inputs = ["q", "past_key", "new_key", "past_value", "new_value"], npu.outputs = ["o", "present_key", "present_value"]} {
    %s = npu_graph.constant {value = dense<0.0357073657> : tensor<f32>} : tensor<f32>
    %z = npu_graph.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %qk = npu_graph.quantize %pk, %s, %z : (tensor<1x2x7x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x7x8xi8> loc("qk")
    %qv = npu_graph.quantize %pv, %s, %z : (tensor<1x2x7x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x7x8xi8> loc("qv")
    %k = npu_graph.concat %qk, %nk {axis = 2 : i64} : (tensor<1x2x7x8xi8>, tensor<1x2x1x8xi8>) -> tensor<1x2x8x8xi8> loc("k")
    %v = npu_graph.concat %qv, %nv {axis = 2 : i64} : (tensor<1x2x7x8xi8>, tensor<1x2x1x8xi8>) -> tensor<1x2x8x8xi8> loc("v")
    %dk = npu_graph.dequantize %k, %s, %z : (tensor<1x2x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x8x8xf32> loc("dk")
    %dv = npu_graph.dequantize %v, %s, %z : (tensor<1x2x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x8x8xf32> loc("dv")
    %o = npu_graph.attention %q, %k, %v {scale = 1.000000e+00 : f32, quant = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00, 4.259690e-03, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.017024029, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.00787401572, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.0830077827, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.000000e+00, 0.000000e+00>, score_table = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, -128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1>, key_rows} : (tensor<1x2x1x8xi8>, tensor<1x2x8x8xi8>, tensor<1x2x8x8xi8>) -> tensor<1x2x1x8xi8> loc("attn")
    func.return %o, %dk, %dv : tensor<1x2x1x8xi8>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
  }
}
// CHECK:      npu_tile.loop {{.*}} -> tensor<1x2x1x8xi8>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32> {
// CHECK-NEXT:   ^bb0(%d0: index, %d1: index, %d2: index, %d3: index, %t: index):
// CHECK-NEXT:     %[[Q:.*]] = npu_tile.load {{.*}} : tensor<1x2x1x8xi8>
// CHECK-NEXT:     %[[PK:.*]] = npu_tile.load {{.*}} pad 0.0 : tensor<1x2x7x8xf32>
// CHECK-NEXT:     %[[PV:.*]] = npu_tile.load {{.*}} pad 0.0 : tensor<1x2x7x8xf32>
// CHECK-NEXT:     %[[NK:.*]] = npu_tile.load {{.*}} pad 0.0 : tensor<1x2x1x8xi8>
// CHECK-NEXT:     %[[NV:.*]] = npu_tile.load {{.*}} pad 0.0 : tensor<1x2x1x8xi8>
// CHECK-NEXT:     %[[S:.*]] = npu_tile.load %1({{.*}})[] sizes [] : tensor<f32>
// CHECK-NEXT:     %[[Z:.*]] = npu_tile.load %2({{.*}})[] sizes [] : tensor<f32>
// CHECK-NEXT:     %[[NKF:.*]] = npu_graph.dequantize %[[NK]], %[[S]], %[[Z]] {{.*}} -> tensor<1x2x8x8xf32>
// CHECK-NEXT:     %[[SK:.*]] = npu_graph.add %[[PK]], %[[NKF]]
// CHECK-NEXT:     %[[K:.*]] = npu_graph.quantize %[[SK]], %[[S]], %[[Z]] {{.*}} -> tensor<1x2x8x8xi8>
// CHECK-NEXT:     %[[KF:.*]] = npu_graph.dequantize %[[K]], %[[S]], %[[Z]]
// CHECK-NEXT:     npu_tile.tee %[[KF]] into 1
// CHECK:          npu_tile.tee %{{.*}} into 2
// CHECK-NEXT:     %[[A:.*]] = npu_graph.attention %[[Q]], %[[K]], %{{.*}}
// BUF-COUNT-8:    npu_task.sram {{.*}} : memref<{{.*}}x8x8x{{f32|i8}}
// SIM: check:       ok vs numpy float64 reference
