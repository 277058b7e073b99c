// RUN: %opt %s -p npu-tile,npu-layer-group --remarks -o /dev/null 2>&1 | filecheck %s

// A pair left apart whose first kernel's result is also read after them (returned
// here; a residual add's input in a ResNet): whole tensors do not fit a core's SRAM,
// and no strip group takes them either; the remark says a strip group would have had
// to store that kernel's result too, and names it.
builtin.module attributes {npu.arch = #npu.arch<cores = 1, sram_bytes = 131072>} {
  func.func @main(%x: tensor<64x256xf32>) -> (tensor<64x256xf32>, tensor<64x256xf32>) attributes {npu.inputs = ["x"], npu.outputs = ["m", "y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<256x256xf32>} : tensor<256x256xf32>
    %m = npu_graph.matmul %x, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32> loc("fc")
    %r = npu_graph.relu %m : (tensor<64x256xf32>) -> tensor<64x256xf32> loc("act")
    func.return %m, %r : tensor<64x256xf32>, tensor<64x256xf32>
  }
}
// CHECK: remark: npu-layer-group: missed: [fc, act] 'fc' and the next kernel not grouped: their tensors do not fit one core's SRAM together: whole they need {{[0-9]+}} bytes, {{[0-9]+}} more than its 131072, and no strip height fits (storing the result of 'fc' too)
// CHECK-NOT: npu-layer-group: applied
