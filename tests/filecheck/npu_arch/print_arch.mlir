// `npu-opt --print-arch SPEC` prints the machine an --arch SPEC resolves to: the
// canonical spec as a comment, then every parameter, as a chip file.

// A preset with overrides (byte sizes take K/M suffixes).
// RUN: npu-opt --print-arch edge-small,sram_bytes=256K,cores=2 | filecheck %s --check-prefix=PRESET
// PRESET:      # default,cores=2,cube=8x8x8,vector_lanes=16,sram_bytes=262144,dram_bw=32,dma_channels=1,event_slots=16
// PRESET-NEXT: cores = 2
// PRESET-NEXT: cube = "8x8x8"
// PRESET-NEXT: vector_lanes = 16
// PRESET-NEXT: sram_bytes = 262144
// PRESET:      align = 64

// A chip file based on another chip file (relative to it) based on a preset,
// then an override after the file.
// RUN: npu-opt --print-arch %S/Inputs/chips/edge-big-2core.toml,dram_bw=64 | filecheck %s --check-prefix=FILE
// FILE:      # default,cores=2,cube=8x16x32,vector_lanes=16,sram_bytes=1048576,dram_bw=64,dma_channels=1,event_slots=16
// FILE-NEXT: cores = 2
// FILE-NEXT: cube = "8x16x32"
// FILE:      sram_bytes = 1048576
// FILE-NEXT: dram_bw = 64

// The output is itself a chip file that resolves to the same machine.
// RUN: npu-opt --print-arch %S/Inputs/chips/edge-big.toml > %t.toml
// RUN: npu-opt --print-arch %t.toml | filecheck %s --check-prefix=SAME
// SAME: # default,cores=1,cube=8x16x32,vector_lanes=16,sram_bytes=1048576,dram_bw=32,dma_channels=1,event_slots=16

// Errors name the file, the key and what is allowed.
// RUN: not npu-opt --print-arch %S/Inputs/chips/bad-range.toml 2>&1 | filecheck %s --check-prefix=RANGE
// RANGE: error: bad --print-arch '{{.*}}bad-range.toml': {{.*}}bad-range.toml: 'sram_bytes': must be between 1 and {{[0-9]+}}, got 0
// RUN: not npu-opt --print-arch %S/Inputs/chips/cycle-a.toml 2>&1 | filecheck %s --check-prefix=CYCLE
// CYCLE: cycle-b.toml: 'base': a cycle of chip files: {{.*}}cycle-a.toml -> {{.*}}cycle-b.toml -> {{.*}}cycle-a.toml
// RUN: not npu-opt --print-arch edge-smal 2>&1 | filecheck %s --check-prefix=PRESETNAME
// PRESETNAME:      error: bad --print-arch 'edge-smal': unknown arch preset 'edge-smal'
// PRESETNAME-NEXT: hint: did you mean 'edge-small'?
