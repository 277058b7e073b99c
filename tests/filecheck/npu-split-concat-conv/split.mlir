// RUN: %opt %s -p npu-split-concat-conv -o %t.mlir && filecheck %s < %t.mlir
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// A dense layer (DenseNet): X1 = concat(x, f(x)), then BN-ReLU (here add-ReLU) and a
// 1x1 conv over X1. The conv waits for f(x), though x's 8 of X1's 12 channels were
// there before f ran, and the trial plan runs it on one core: it splits over its input
// channels into a conv over f(x)'s 4 channels (the ReLU's shift sliced to [8, 12),
// the weights to W[:, 8:12]) and one over x's 8 (shift [0, 8), W[:, 0:8], the bias),
// summed; the concat stays for the other reader. The run matches numpy.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>} {
  func.func @main(%x: tensor<1x8x4x4xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x12x4x4xf32>) attributes {npu.inputs = ["x"], npu.outputs = ["y", "x1"]} {
    %w1 = npu_graph.constant {value = dense<0.05> : tensor<4x8x3x3xf32>} : tensor<4x8x3x3xf32>
    %c = npu_graph.constant {value = dense<[[[0.1]], [[0.2]], [[0.3]], [[0.4]], [[0.5]], [[0.6]], [[0.7]], [[0.8]], [[-0.1]], [[-0.2]], [[-0.3]], [[-0.4]]]> : tensor<12x1x1xf32>} : tensor<12x1x1xf32>
    %w2 = npu_graph.constant {value = dense<0.25> : tensor<6x12x1x1xf32>} : tensor<6x12x1x1xf32>
    %b2 = npu_graph.constant {value = dense<0.5> : tensor<6xf32>} : tensor<6xf32>
    %r0 = npu_graph.relu %x : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> loc("relu0")
    %f = npu_graph.conv2d %r0, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x4x4xf32> loc("f")
    %x1 = npu_graph.concat %x, %f {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x12x4x4xf32> loc("cat")
    %a = npu_graph.add %x1, %c : (tensor<1x12x4x4xf32>, tensor<12x1x1xf32>) -> tensor<1x12x4x4xf32> loc("bn")
    %r = npu_graph.relu %a : (tensor<1x12x4x4xf32>) -> tensor<1x12x4x4xf32> loc("relu")
    %y = npu_graph.conv2d %r, %w2, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x12x4x4xf32>, tensor<6x12x1x1xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32> loc("conv")
    func.return %y, %x1 : tensor<1x6x4x4xf32>, tensor<1x12x4x4xf32>
  }
}
// CHECK:      %x1 = npu_graph.concat %x, %f
// CHECK:      %[[CB:.*]] = npu_graph.constant {value = dense<[{{\[\[}}-1.000000e-01]], {{\[\[}}-2.000000e-01]], {{\[\[}}-3.000000e-01]], {{\[\[}}-4.000000e-01]]]> : tensor<4x1x1xf32>}
// CHECK-NEXT: %[[AB:.*]] = npu_graph.add %f, %[[CB]] : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT: %[[RB:.*]] = npu_graph.relu %[[AB]]
// CHECK-NEXT: %[[WB:.*]] = npu_graph.constant {weight = "conv.part"} : tensor<6x4x1x1xf32>
// CHECK-NEXT: %[[SMALL:.*]] = npu_graph.conv2d %[[RB]], %[[WB]] {{.*}} : (tensor<1x4x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT: %[[CA:.*]] = npu_graph.constant {value = dense<[{{\[\[}}1.000000e-01]], {{.*}}, {{\[\[}}8.000000e-01]]]> : tensor<8x1x1xf32>}
// CHECK-NEXT: %[[AA:.*]] = npu_graph.add %x, %[[CA]] : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT: %[[RA:.*]] = npu_graph.relu %[[AA]]
// CHECK-NEXT: %[[WA:.*]] = npu_graph.constant {weight = "conv.part#2"} : tensor<6x8x1x1xf32>
// CHECK-NEXT: %[[BIG:.*]] = npu_graph.conv2d %[[RA]], %[[WA]], %b2 {{.*}} : (tensor<1x8x4x4xf32>, tensor<6x8x1x1xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT: %{{.*}} = npu_graph.add %[[SMALL]], %[[BIG]] : (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NOT:  npu_graph.conv2d %r,

// SIM: check:       ok vs numpy float64 reference
