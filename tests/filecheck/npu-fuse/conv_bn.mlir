// RUN: %opt %s -p npu-fuse | filecheck %s
// RUN: %opt %s -p 'npu-fuse{disable=conv-bn}' | filecheck %s --check-prefix=NOBN
// RUN: %opt %s -p 'npu-fuse{disable=layer-group}' | filecheck %s --check-prefix=NOGROUP

// conv-bn: the batchnorm folds into the conv's weight and bias (scale 2, bias 1,
// mean 0, var 1 - eps: mul = 2, offset = 1), then conv-epilogue takes the relu.
builtin.module {
  func.func @conv_bn_relu(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
    %w = npu_graph.constant {value = dense<0.5> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
    %s = npu_graph.constant {value = dense<2.0> : tensor<2xf32>} : tensor<2xf32>
    %o = npu_graph.constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
    %m = npu_graph.constant {value = dense<0.0> : tensor<2xf32>} : tensor<2xf32>
    %v = npu_graph.constant {value = dense<0.99999> : tensor<2xf32>} : tensor<2xf32>
    %c = npu_graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> loc("conv")
    %b = npu_graph.batchnorm %c, %s, %o, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("bn")
    %r = npu_graph.relu %b : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("relu")
    func.return %r : tensor<1x2x4x4xf32>
  }
}
// CHECK:      %[[W:.*]] = npu_graph.constant {value = dense<1.000000e+00> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
// CHECK:      %[[B:.*]] = npu_graph.constant {value = dense<1.000000e+00> : tensor<2xf32>} : tensor<2xf32>
// CHECK:      npu_graph.fused(%x, %[[W]], %[[B]]) {kernel = "conv", rule = "conv-epilogue"}
// CHECK:        npu_graph.conv2d
// CHECK-NEXT:   npu_graph.relu
// CHECK-NOT:  npu_graph.batchnorm
// CHECK-NOT:  npu.fuse_disable

// Switched off: the batchnorm stays after a lone conv (it is no epilogue link).
// NOBN:       builtin.module attributes {npu.fuse_disable = ["conv-bn"]}
// NOBN:       %c = npu_graph.conv2d %x, %w
// NOBN-NEXT:  %b = npu_graph.batchnorm %c
// NOBN-NOT:   npu_graph.fused

// layer-group is recorded for npu-layer-group; conv-bn still folds.
// NOGROUP:     builtin.module attributes {npu.fuse_disable = ["layer-group"]}
// NOGROUP:     rule = "conv-epilogue"
// NOGROUP-NOT: npu_graph.batchnorm
