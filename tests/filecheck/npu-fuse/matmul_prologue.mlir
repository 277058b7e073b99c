// RUN: %opt %s -p npu-fuse -o %t.mlir && filecheck %s < %t.mlir
// RUN: %opt %s -p npu-fuse --remarks -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK
// RUN: %opt %s -p 'npu-fuse{disable=matmul-prologue}' -o %t2.mlir && filecheck %s --check-prefix=OFF < %t2.mlir
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM
// RUN: npu-run %s --check -p 'npu-default{fuse-disable=matmul-prologue}' 2>&1 | filecheck %s --check-prefix=SIM

// The `matmul-prologue` rule: a pre-LN block's LayerNorm (64 KiB, more than a core's
// 32 KiB of SRAM) read only by a projection through GPT-2's row-flattening reshape
// becomes its rows' statistics (row_stats, a kernel of its own) and, in the
// projection's kernel, layernorm_apply on the A tiles: the normalised tensor is never
// written. The scale and bias fold into the weights (diag(scale) W, a new constant)
// and the projection's bias (bias W + c), so the apply only centres and scales by
// the rows' factor (scale 1, no bias). Switched off, the LayerNorm stays whole. Both
// runs match numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 4, sram_bytes = 32768>} {
  func.func @main(%x: tensor<1x1024x16xf32>) -> tensor<1x1024x8xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %g = npu_graph.constant {value = dense<[1.001, 1.149, 0.8629, 0.5547, 0.7727, 0.5042, 1.03, 1.67, 0.7539, 0.6898, 1.245, 1.178, 1.053, 0.5348, 0.9854, 1.348]> : tensor<16xf32>} : tensor<16xf32>
    %b = npu_graph.constant {value = dense<[-0.4033, -0.1373, -0.5704, -0.3869, -0.5525, -0.07053, -0.3802, 0.08138, 0.04703, -0.05608, -0.755, -0.1616, -0.01455, 0.03399, -0.459, -0.1433]> : tensor<16xf32>} : tensor<16xf32>
    %w = npu_graph.constant {value = dense<[[-0.1957, -0.1618, 0.2122, -0.1615, -0.006504, 0.1769, -0.1167, -0.02234], [0.02209, 0.01276, -0.245, 0.01523, 0.2718, -0.3094, 0.1719, 0.02387], [-0.1283, 0.4001, 0.1525, -0.2399, 0.0149, 0.1153, -0.03776, 0.1366], [-0.0133, 0.1334, 0.2877, -0.1351, 0.04063, -0.09266, 0.02545, -0.2374], [-0.1159, -0.03924, 0.1798, 0.229, -0.2647, -0.1589, 0.1294, -0.3985], [-0.09263, -0.01946, 0.2514, 0.1379, -0.06544, -0.07372, -0.05004, 0.3047], [-0.0856, -0.06074, 0.07052, -0.02415, -0.03946, -0.2228, -0.002304, -0.08872], [0.2332, 0.1306, -0.004829, 0.1337, -0.06797, 0.2104, -0.00108, 0.1167], [-0.2582, 0.06934, -0.3376, -0.4071, -0.0609, -0.18, 0.03281, 0.449], [-0.1663, -0.1248, 0.04108, 0.0986, -0.03528, -0.04119, 0.1405, 0.104], [-0.2067, -0.01584, 0.007057, -0.2109, 0.05197, -0.1716, 0.1944, 0.03855], [0.01786, -0.1182, -0.02372, -0.3995, -0.2263, 0.07257, -0.4257, 0.1693], [-0.3492, 0.1513, -0.1691, 0.1558, 0.02619, -0.3074, 0.2498, 0.2883], [-0.01316, -0.05478, -0.03197, -0.195, 0.2197, -0.1086, -0.01024, -0.1587], [-0.1252, -0.2555, 0.2514, -0.03082, 0.1932, 0.002665, -0.1389, -0.06534], [-0.112, 0.001592, -0.07505, -0.05998, -0.2757, -0.1614, 0.3308, -0.1342]]> : tensor<16x8xf32>} : tensor<16x8xf32>
    %c = npu_graph.constant {value = dense<[-0.1054, 0.03373, 0.1407, -0.1454, -0.02085, -0.06321, -0.1761, 0.07349]> : tensor<8xf32>} : tensor<8xf32>
    %h = npu_graph.layernorm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<1x1024x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x1024x16xf32> loc("ln")
    %h2 = npu_graph.reshape %h : (tensor<1x1024x16xf32>) -> tensor<1024x16xf32> loc("flat")
    %p = npu_graph.matmul %h2, %w : (tensor<1024x16xf32>, tensor<16x8xf32>) -> tensor<1024x8xf32> loc("proj")
    %q = npu_graph.add %p, %c : (tensor<1024x8xf32>, tensor<8xf32>) -> tensor<1024x8xf32> loc("proj_bias")
    %y = npu_graph.reshape %q : (tensor<1024x8xf32>) -> tensor<1x1024x8xf32> loc("unflat")
    func.return %y : tensor<1x1024x8xf32>
  }
}
// CHECK:       %[[S:.*]] = npu_graph.row_stats %x {kind = "moments"} : (tensor<1x1024x16xf32>) -> tensor<1x1024x3xf32>
// CHECK:       %[[XV:.*]] = npu_graph.reshape %x : (tensor<1x1024x16xf32>) -> tensor<1024x16xf32>
// CHECK-NEXT:  %[[SV:.*]] = npu_graph.reshape %[[S]] : (tensor<1x1024x3xf32>) -> tensor<1024x3xf32>
// CHECK:       %[[K:.*]] = npu_graph.fused(%[[XV]], %[[SV]], %[[ONE:.*]], %[[WF:.*]], %[[CF:.*]]) {kernel = "proj", rule = "matmul-prologue,matmul-epilogue"}
// CHECK-NEXT:  ^bb0(%[[A0:.*]]: tensor<1024x16xf32>, %[[A1:.*]]: tensor<1024x3xf32>, %[[A2:.*]]: tensor<1xf32>, %[[A3:.*]]: tensor<16x8xf32>, %[[A4:.*]]: tensor<8xf32>):
// CHECK-NEXT:    %[[N:.*]] = npu_graph.layernorm_apply %[[A0]], %[[A1]], %[[A2]] {epsilon = 1.000000e-05 : f32}
// CHECK-NEXT:    %[[P:.*]] = npu_graph.matmul %[[N]], %[[A3]]
// CHECK-NEXT:    %[[Q:.*]] = npu_graph.add %[[P]], %[[A4]]
// CHECK-NEXT:    npu_graph.yield %[[Q]]
// CHECK-NOT:   npu_graph.layernorm %
// REMARK: remark: npu-fuse: applied: [ln] matmul-prologue: row statistics, then normalised on the A tiles of 1 matmul(s): its 65536-byte result is never written
// REMARK: remark: npu-fuse: applied: [ln, proj, proj_bias] matmul-prologue,matmul-epilogue: 3 ops (layernorm_apply, matmul, add) as one kernel
// OFF:         npu_graph.layernorm %x, %g, %b
// OFF-NOT:     npu_graph.row_stats
// SIM: check:       ok vs numpy float64 reference
