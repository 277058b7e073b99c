// RUN: %roundtrip
// The #npu.arch attribute always prints every parameter; the ones not written
// take the `default` preset's value, so a partial list prints in full.

builtin.module {
  // A full parameter list round-trips unchanged.
  // CHECK: builtin.module attributes {npu.arch = #npu.arch<cores = 8, cube = 32x32x32, vector_lanes = 128, sram_bytes = 2097152, dram_bw = 512, dma_latency = 300, dma_channels = 4, event_slots = 32, sync_latency = 50, freq = 1500000000, align = 128, cube_i8 = 2, cube_f32_passes = 1, vector_f16 = 2, vector_i8 = 4, requant = float, requant_unit = cube, bias_unit = cube, units = concurrent, flag_latency = 4, fn_exp = exact, fn_tanh = exact, fn_erf = exact, fn_sigmoid = exact, fn_reciprocal = exact, fn_rsqrt = exact>}
  builtin.module attributes {npu.arch = #npu.arch<cores = 8, cube = 32x32x32, vector_lanes = 128, sram_bytes = 2097152, dram_bw = 512, dma_latency = 300, dma_channels = 4, event_slots = 32, sync_latency = 50, freq = 1500000000, align = 128>} {
  }

  // A partial list, with a non-cubic cube (M x K x N), is completed with the defaults.
  // CHECK: builtin.module attributes {npu.arch = #npu.arch<cores = 2, cube = 8x16x32, vector_lanes = 64, sram_bytes = 524288, dram_bw = 128, dma_latency = 200, dma_channels = 2, event_slots = 64, sync_latency = 100, freq = 1000000000, align = 64, cube_i8 = 2, cube_f32_passes = 1, vector_f16 = 2, vector_i8 = 4, requant = float, requant_unit = cube, bias_unit = cube, units = concurrent, flag_latency = 4, fn_exp = exact, fn_tanh = exact, fn_erf = exact, fn_sigmoid = exact, fn_reciprocal = exact, fn_rsqrt = exact>}
  builtin.module attributes {npu.arch = #npu.arch<cube = 8x16x32, cores = 2>} {
  }

  // A single parameter.
  // CHECK: builtin.module attributes {npu.arch = #npu.arch<cores = 1, cube = 16x16x16, {{.*}}, align = 256, {{.*}}, requant = float, requant_unit = cube, {{.*}}>}
  builtin.module attributes {npu.arch = #npu.arch<align = 256, cores = 1>} {
  }

  // The precision parameters: the cube's int8 and f32 rates, the vector unit's 16-bit
  // and 8-bit rates, the requantization unit (names: float or fixed; cube or vector).
  // CHECK: builtin.module attributes {npu.arch = #npu.arch<cores = 4, {{.*}}, align = 64, cube_i8 = 4, cube_f32_passes = 4, vector_f16 = 2, vector_i8 = 8, requant = fixed, requant_unit = vector, {{.*}}>}
  builtin.module attributes {npu.arch = #npu.arch<requant = fixed, requant_unit = vector, cube_f32_passes = 4, cube_i8 = 4, vector_i8 = 8>} {
  }
  // How the vector unit evaluates each special function: exact, a table of N entries
  // or a polynomial of degree D; a per-type value (items joined by '+') is a string.
  // CHECK: builtin.module attributes {npu.arch = #npu.arch<cores = 4, {{.*}}, requant_unit = cube, bias_unit = cube, units = concurrent, flag_latency = 4, fn_exp = table256, fn_tanh = exact, fn_erf = poly7, fn_sigmoid = exact, fn_reciprocal = "f16:table64+exact", fn_rsqrt = exact>}
  builtin.module attributes {npu.arch = #npu.arch<fn_erf = poly7, fn_exp = table256, fn_reciprocal = "f16:table64+exact">} {
  }
}
