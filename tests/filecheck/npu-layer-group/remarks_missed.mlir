// RUN: %opt %s -p npu-tile,npu-layer-group --remarks -o /dev/null 2>&1 | filecheck %s

// A pair left apart because it does not fit: the remark gives the bytes its whole
// tensors would need together and how far over a core's SRAM that is (the weight
// alone is 256 KiB against 128 KiB, so no strip height fits either): x 64 KiB + w
// 256 KiB + the result 64 KiB (relu works in place) = 393216 bytes.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 131072>} {
  func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<256x256xf32>} : tensor<256x256xf32>
    %m = npu_graph.matmul %x, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("fc")
    %r = npu_graph.relu %m : (tensor<64x256xf32>) -> tensor<64x256xf32> loc("act")
    func.return %r : tensor<64x256xf32>
  }
}
// CHECK: remark: npu-layer-group: missed: [fc, act] 'fc' and the next kernel not grouped: their tensors do not fit one core's SRAM together: whole they need 393216 bytes, 262144 more than its 131072, and no strip height fits
// CHECK-NOT: npu-layer-group: applied
