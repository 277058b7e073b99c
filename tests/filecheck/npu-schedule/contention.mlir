// RUN: %opt %s --split-input-file -p npu-schedule | filecheck %s

// Two independent DRAM-heavy tasks run side by side on cores 0 and 1 and share
// dram_bw = 128 B/cycle: each must see both tasks' 25,600 bytes go by, so its
// prediction becomes 51,200 / 128 + dma_latency 200 = 600 cycles (400 alone); the
// fair-share estimate (each wants 64 B/cycle and gets it) stays at 400, the larger wins.
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 400 : i64, dram_bytes = 25600 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 400 : i64, dram_bytes = 25600 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}
// CHECK: npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 600 : i64, dram_bytes = 25600 : i64}
// CHECK: npu_task.task "b" attributes {core = 1 : i64, range = array<i64: 0, 1>, predicted_cycles = 600 : i64, dram_bytes = 25600 : i64}

// -----

// A compute-bound neighbour barely matters: "b" moves 6,400 bytes over 2,000 cycles,
// 1,280 of them in the 400 cycles "a" runs, so "a" needs (25,600 + 1,280) / 128 + 200 =
// 410 cycles; "b" must not stretch (all 32,000 bytes take 250 + 200 < 2,000).
builtin.module {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 400 : i64, dram_bytes = 25600 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 2000 : i64, dram_bytes = 6400 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}
// CHECK: npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 410 : i64, dram_bytes = 25600 : i64}
// CHECK: npu_task.task "b" attributes {core = 1 : i64, range = array<i64: 0, 1>, predicted_cycles = 2000 : i64, dram_bytes = 6400 : i64}

// -----

// The fair-share estimate wins where the bytes estimate misses an overlap: "b"
// (102,400 bytes over 800 cycles: it wants all of dram_bw) shares the DRAM half and
// half with "a" and then with "c" on core 0, so it moves at half speed throughout:
// 1,600 cycles (the bytes estimate: 1,400). "c" starts when "a" ends; the bytes
// estimate, in the placement, has "b" over by then (at 800) and leaves "c" at 400,
// but "b" is still moving: at half speed, "c" needs 800.
builtin.module attributes {npu.arch = #npu.arch<cores = 2>} {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">, %z: memref<64xf32, "dram">, %w: memref<64xf32, "dram">) {
    npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 800 : i64, dram_bytes = 51200 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 800 : i64, dram_bytes = 102400 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    npu_task.task "c" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 400 : i64, dram_bytes = 51200 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %w[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}
// CHECK: npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 1400 : i64, dram_bytes = 51200 : i64}
// CHECK: npu_task.task "b" attributes {core = 1 : i64, range = array<i64: 0, 1>, predicted_cycles = 1600 : i64, dram_bytes = 102400 : i64}
// CHECK: npu_task.task "c" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 800 : i64, dram_bytes = 51200 : i64}

// -----

// A burst: "a" loads 51,200 bytes into SRAM before it computes (alone: 200 + 400 =
// 600 cycles at 85.3 B/cycle), then computes 1,400 cycles; "b" beside it wants 60
// B/cycle. On average "a" wants 25.6 B/cycle and nothing would stretch; its leading
// loads get the 68 B/cycle "b" leaves, so they take 600 / (68 / 85.3) = 753 cycles:
// "a" 2,153. The bytes estimate ((51,200 + 120,000) / 128 + 200 = 1,538) stays below.
builtin.module attributes {npu.arch = #npu.arch<cores = 2>} {
  func.func @main(%w: memref<12800xf32, "dram">, %x: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 2000 : i64, dram_bytes = 51200 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %s = npu_task.sram {offset = 0 : i64} : memref<12800xf32, "sram">
      %t = npu_dma.copy %w[%c0] -> %s[%c0] {sizes = array<i64: 12800>} : memref<12800xf32, "dram"> -> memref<12800xf32, "sram">
      npu_dma.wait %t
    }
    npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 4000 : i64, dram_bytes = 240000 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}
// CHECK: npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 2153 : i64, dram_bytes = 51200 : i64}
// CHECK: npu_task.task "b" attributes {core = 1 : i64, range = array<i64: 0, 1>, predicted_cycles = 4000 : i64, dram_bytes = 240000 : i64}

// -----

// Must not stretch on one core: nothing runs beside anything.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: memref<64xf32, "dram">, %y: memref<64xf32, "dram">, %z: memref<64xf32, "dram">) {
    npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 400 : i64, dram_bytes = 25600 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %y[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 400 : i64, dram_bytes = 25600 : i64} {
    ^bb0(%lo: index, %hi: index):
      %c0 = arith.constant 0 : index
      %t = npu_dma.copy %x[%c0] -> %z[%c0] {sizes = array<i64: 64>} : memref<64xf32, "dram"> -> memref<64xf32, "dram">
      npu_dma.wait %t
    }
    func.return
  }
}
// CHECK: npu_task.task "a" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 400 : i64, dram_bytes = 25600 : i64}
// CHECK: npu_task.task "b" attributes {core = 0 : i64, range = array<i64: 0, 1>, predicted_cycles = 400 : i64, dram_bytes = 25600 : i64}
