// RUN: %opt %s --split-input-file --parsing-diagnostics | filecheck %s
// Errors of the #npu.arch attribute are reported while parsing.

builtin.module attributes {npu.arch = #npu.arch<cores = 2, tensor_cores = 1>} {
}
// CHECK: unknown npu.arch parameter 'tensor_cores'

// -----

builtin.module attributes {npu.arch = #npu.arch<cores = 0>} {
}
// CHECK: arch parameter 'cores' must be a positive integer, got 0

// -----

builtin.module attributes {npu.arch = #npu.arch<dram_bw = -128>} {
}
// CHECK: arch parameter 'dram_bw' must be a positive integer, got -128

// -----

builtin.module attributes {npu.arch = #npu.arch<cube = 8x0x8>} {
}
// CHECK: arch parameter 'cube' must be a positive integer, got 8x0x8

// -----

builtin.module attributes {npu.arch = #npu.arch<align = 48>} {
}
// CHECK: arch parameter 'align' must be a power of two, got 48

// -----

builtin.module attributes {npu.arch = #npu.arch<cube = 16x16>} {
}
// CHECK: arch parameter 'cube': expected MxKxN, e.g. 16x16x16, got '16x16'

// -----

builtin.module attributes {npu.arch = #npu.arch<requant = round>} {
}
// CHECK: arch parameter 'requant': expected one of float, fixed, got 'round'

// -----

builtin.module attributes {npu.arch = #npu.arch<requant = 1>} {
}
// CHECK: npu.arch parameter 'requant' expects one of float, fixed

// -----

builtin.module attributes {npu.arch = #npu.arch<cube_i8 = 0>} {
}
// CHECK: arch parameter 'cube_i8' must be a positive integer, got 0

// -----

builtin.module attributes {npu.arch = #npu.arch<fn_exp = table1>} {
}
// CHECK: arch parameter 'fn_exp': a table has 2 to 1048576 entries, got 1

// -----

builtin.module attributes {npu.arch = #npu.arch<fn_erf = "f64:poly5">} {
}
// CHECK: arch parameter 'fn_erf': 'f64' is not a float type (f32, f16, bf16)

// -----

builtin.module attributes {npu.arch = #npu.arch<fn_tanh = cubic>} {
}
// CHECK: arch parameter 'fn_tanh': 'cubic' is not exact, tableN or polyD (optionally TYPE:..., items joined by '+')
