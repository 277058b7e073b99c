// RUN: %opt %s --split-input-file -p npu-fuse | filecheck %s
// RUN: %opt %s --split-input-file -p npu-fuse --remarks -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK

// `kv-append` on a quantized model whose KV cache is float at its inputs and outputs
// (onnxruntime's QDQ form: quantize(past) -> concat -> attention, dequantize(concat) ->
// the present output): the kernel takes both quantizes and both dequantizes, reads the
// float past and writes the float present (`FuseKvAppend.kv_conversions`).
// CHECK-LABEL: func.func @float_cache
// CHECK:         %[[O:.*]], %[[PK:.*]], %[[PV:.*]] = npu_graph.fused(%pk, %s, %z, %pv, %nk, %nv, %q) {kernel = "attn", rule = "kv-append"} : ({{.*}}) -> (tensor<1x2x1x8xi8>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) {
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      %[[QK:.*]] = npu_graph.quantize
// CHECK-NEXT:      %[[QV:.*]] = npu_graph.quantize
// CHECK-NEXT:      %[[K:.*]] = npu_graph.concat %[[QK]],
// CHECK-NEXT:      %[[V:.*]] = npu_graph.concat %[[QV]],
// CHECK-NEXT:      %[[A:.*]] = npu_graph.attention {{.*}}, %[[K]], %[[V]]
// CHECK-NEXT:      %[[DK:.*]] = npu_graph.dequantize %[[K]],
// CHECK-NEXT:      %[[DV:.*]] = npu_graph.dequantize %[[V]],
// CHECK-NEXT:      npu_graph.yield %[[A]], %[[DK]], %[[DV]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[O]], %[[PK]], %[[PV]]
// REMARK: remark: npu-fuse: applied: [qk, qv, k, v (+3)] kv-append: the attention reads the 7 cached positions and the new ones in one pass and writes the present cache as it reads (no concat copies); the float cache quantized and the present dequantized block by block in SRAM
func.func @float_cache(%q: tensor<1x2x1x8xi8>, %pk: tensor<1x2x7x8xf32>, %nk: tensor<1x2x1x8xi8>, %pv: tensor<1x2x7x8xf32>, %nv: tensor<1x2x1x8xi8>) -> (tensor<1x2x1x8xi8>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) {
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

// -----

// Not taken: a zero point other than 0 (the block's rows past the cache would not be
// the quantized zeros the new rows' add needs). The kv-append forms on the 8-bit
// cache, the quantizes and dequantizes stay outside it.
// CHECK-LABEL: func.func @zero_point
// CHECK:         npu_graph.quantize %pk
// CHECK:         npu_graph.quantize %pv
// CHECK:         npu_graph.fused({{.*}}) {kernel = "attn", rule = "kv-append"} : ({{.*}}) -> (tensor<1x2x1x8xi8>, tensor<1x2x8x8xi8>, tensor<1x2x8x8xi8>)
// CHECK:         npu_graph.dequantize
// CHECK:         npu_graph.dequantize
func.func @zero_point(%q: tensor<1x2x1x8xi8>, %pk: tensor<1x2x7x8xf32>, %nk: tensor<1x2x1x8xi8>, %pv: tensor<1x2x7x8xf32>, %nv: tensor<1x2x1x8xi8>) -> (tensor<1x2x1x8xi8>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) {
  %s = npu_graph.constant {value = dense<0.0357073657> : tensor<f32>} : tensor<f32>
  %z = npu_graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  %qk = npu_graph.quantize %pk, %s, %z : (tensor<1x2x7x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x7x8xi8> loc("qk")
  %qv = npu_graph.quantize %pv, %s, %z : (tensor<1x2x7x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x7x8xi8> loc("qv")
  %k = npu_graph.concat %qk, %nk {axis = 2 : i64} : (tensor<1x2x7x8xi8>, tensor<1x2x1x8xi8>) -> tensor<1x2x8x8xi8> loc("k")
  %v = npu_graph.concat %qv, %nv {axis = 2 : i64} : (tensor<1x2x7x8xi8>, tensor<1x2x1x8xi8>) -> tensor<1x2x8x8xi8> loc("v")
  %dk = npu_graph.dequantize %k, %s, %z : (tensor<1x2x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x8x8xf32> loc("dk")
  %dv = npu_graph.dequantize %v, %s, %z : (tensor<1x2x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x8x8xf32> loc("dv")
  %o = npu_graph.attention %q, %k, %v {scale = 1.000000e+00 : f32, quant = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00, 4.259690e-03, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.017024029, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.00787401572, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.0830077827, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.000000e+00, 0.000000e+00>, score_table = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, -128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1>, key_rows} : (tensor<1x2x1x8xi8>, tensor<1x2x8x8xi8>, tensor<1x2x8x8xi8>) -> tensor<1x2x1x8xi8> loc("attn")
  func.return %o, %dk, %dv : tensor<1x2x1x8xi8>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
}

// -----

// Not taken: the present is read by another op than the return.
// CHECK-LABEL: func.func @present_read
// CHECK:         npu_graph.fused({{.*}}) {kernel = "attn", rule = "kv-append"} : ({{.*}}) -> (tensor<1x2x1x8xi8>, tensor<1x2x8x8xi8>, tensor<1x2x8x8xi8>)
// CHECK:         npu_graph.dequantize
func.func @present_read(%q: tensor<1x2x1x8xi8>, %pk: tensor<1x2x7x8xf32>, %nk: tensor<1x2x1x8xi8>, %pv: tensor<1x2x7x8xf32>, %nv: tensor<1x2x1x8xi8>) -> (tensor<1x2x1x8xi8>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) {
  %s = npu_graph.constant {value = dense<0.0357073657> : tensor<f32>} : tensor<f32>
  %z = npu_graph.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
  %qk = npu_graph.quantize %pk, %s, %z : (tensor<1x2x7x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x7x8xi8> loc("qk")
  %qv = npu_graph.quantize %pv, %s, %z : (tensor<1x2x7x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x7x8xi8> loc("qv")
  %k = npu_graph.concat %qk, %nk {axis = 2 : i64} : (tensor<1x2x7x8xi8>, tensor<1x2x1x8xi8>) -> tensor<1x2x8x8xi8> loc("k")
  %v = npu_graph.concat %qv, %nv {axis = 2 : i64} : (tensor<1x2x7x8xi8>, tensor<1x2x1x8xi8>) -> tensor<1x2x8x8xi8> loc("v")
  %dk = npu_graph.dequantize %k, %s, %z : (tensor<1x2x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x8x8xf32> loc("dk")
  %dv = npu_graph.dequantize %v, %s, %z : (tensor<1x2x8x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x8x8xf32> loc("dv")
  %o = npu_graph.attention %q, %k, %v {scale = 1.000000e+00 : f32, quant = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00, 4.259690e-03, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.017024029, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.00787401572, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.0830077827, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.000000e+00, 0.000000e+00>, score_table = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, -128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1>, key_rows} : (tensor<1x2x1x8xi8>, tensor<1x2x8x8xi8>, tensor<1x2x8x8xi8>) -> tensor<1x2x1x8xi8> loc("attn")
  %e = npu_graph.add %dk, %dk : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  func.return %o, %dk, %dv, %e : tensor<1x2x1x8xi8>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
}

// -----

// Not taken: one head's 2048 keys with their conversions need more SRAM than the core
// has (a quantized attention holds all of a row's keys); a remark says so.
// CHECK-LABEL: func.func @long_cache
// CHECK:         npu_graph.fused({{.*}}) {kernel = "attn", rule = "kv-append"} : ({{.*}}) -> (tensor<1x2x1x8xi8>, tensor<1x2x2048x8xi8>, tensor<1x2x2048x8xi8>)
// REMARK: remark: npu-fuse: missed: [qk, qv, dk, dv] kv-append: the float cache's quantize and dequantize stay kernels of their own: one head's 2048 keys with their conversions need 607312 bytes of SRAM, more than sram_bytes=262144
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 262144>} {
func.func @long_cache(%q: tensor<1x2x1x8xi8>, %pk: tensor<1x2x2047x8xf32>, %nk: tensor<1x2x1x8xi8>, %pv: tensor<1x2x2047x8xf32>, %nv: tensor<1x2x1x8xi8>) -> (tensor<1x2x1x8xi8>, tensor<1x2x2048x8xf32>, tensor<1x2x2048x8xf32>) {
  %s = npu_graph.constant {value = dense<0.0357073657> : tensor<f32>} : tensor<f32>
  %z = npu_graph.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
  %qk = npu_graph.quantize %pk, %s, %z : (tensor<1x2x2047x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x2047x8xi8> loc("qk")
  %qv = npu_graph.quantize %pv, %s, %z : (tensor<1x2x2047x8xf32>, tensor<f32>, tensor<f32>) -> tensor<1x2x2047x8xi8> loc("qv")
  %k = npu_graph.concat %qk, %nk {axis = 2 : i64} : (tensor<1x2x2047x8xi8>, tensor<1x2x1x8xi8>) -> tensor<1x2x2048x8xi8> loc("k")
  %v = npu_graph.concat %qv, %nv {axis = 2 : i64} : (tensor<1x2x2047x8xi8>, tensor<1x2x1x8xi8>) -> tensor<1x2x2048x8xi8> loc("v")
  %dk = npu_graph.dequantize %k, %s, %z : (tensor<1x2x2048x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x2048x8xf32> loc("dk")
  %dv = npu_graph.dequantize %v, %s, %z : (tensor<1x2x2048x8xi8>, tensor<f32>, tensor<f32>) -> tensor<1x2x2048x8xf32> loc("dv")
  %o = npu_graph.attention %q, %k, %v {scale = 1.000000e+00 : f32, quant = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00, 4.259690e-03, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.017024029, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.00787401572, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.0830077827, 0.000000e+00, -1.280000e+02, 1.270000e+02, 0.000000e+00, 0.000000e+00>, score_table = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, -128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1>, key_rows} : (tensor<1x2x1x8xi8>, tensor<1x2x2048x8xi8>, tensor<1x2x2048x8xi8>) -> tensor<1x2x1x8xi8> loc("attn")
  func.return %o, %dk, %dv : tensor<1x2x1x8xi8>, tensor<1x2x2048x8xf32>, tensor<1x2x2048x8xf32>
}
}
