// RUN: %opt %s -p npu-default | filecheck %s
// RUN: npu-run %s --check 2>&1 | filecheck %s --check-prefix=SIM

// A 1x1 conv tiled along the image only: the weights' window stays put over every
// step, so npu-bufferize loads them once per task, into one slot, before the step
// loop (their wait sits in the steps, so the first step's input load overlaps it);
// the input tiles alternate between two slots. The tile search counts them once
// (SRAM and DRAM) and the run reads the 16 KB of weights once: 1 MB + 16 KB in all.
// The result matches the numpy reference with the memory sanitizer on (lit sets
// NPU_SANITIZE=1).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<1x64x64x64xf32>) -> tensor<1x64x64x64xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.01> : tensor<64x64x1x1xf32>} : tensor<64x64x1x1xf32>
    %c = npu_graph.conv2d %x, %w : (tensor<1x64x64x64xf32>, tensor<64x64x1x1xf32>) -> tensor<1x64x64x64xf32> loc("conv")
    %r = npu_graph.relu %c : (tensor<1x64x64x64xf32>) -> tensor<1x64x64x64xf32> loc("act")
    func.return %r : tensor<1x64x64x64xf32>
  }
}
// CHECK:      npu_task.task "conv"
// CHECK:        %[[W:.*]] = npu_task.sram {offset = {{[0-9]+}} : i64} : memref<64x64x1x1xf32, "sram">
// CHECK:        %[[TW:.*]] = npu_dma.copy %{{.*}} -> %[[W]]
// CHECK:        scf.for
// CHECK-NOT:      -> %[[W]]
// CHECK:          npu_dma.wait %[[TW]]
// CHECK:          npu_compute.fence vector -> cube
// CHECK-NEXT:     npu_compute.conv2d %{{.*}}, %[[W]]
// CHECK:        }

// SIM: DRAM bytes:  read 1.02 MB (1064960 B), written 1.00 MB (1048576 B)
// SIM: check:       ok vs numpy float64 reference
