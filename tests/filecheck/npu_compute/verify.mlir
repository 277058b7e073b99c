// RUN: %opt %s --split-input-file --verify-diagnostics | filecheck %s
// One chunk per verifier error of npu_compute (an unknown eltwise function or pool
// kind fails to parse: parse_errors.mlir).

// Every compute op (here fill) works on "sram" buffers only.
func.func @f(%a: memref<4x8xf32, "dram">) {
  npu_compute.fill %a {value = 0.0 : f32} : memref<4x8xf32, "dram">
  func.return
}
// CHECK: 'npu_compute.fill': operands must be "sram" memrefs, got memref<4x8xf32, "dram">

// -----

func.func @f(%a: memref<4x8xf32, "sram">, %b: memref<8x6xf32, "sram">, %c: memref<1x4x6xf32, "sram">) {
  npu_compute.matmul %a, %b -> %c : memref<4x8xf32, "sram">, memref<8x6xf32, "sram"> -> memref<1x4x6xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.matmul': operands must have one rank >= 2 (leading dims are batch dims), got [[4, 8], [8, 6], [1, 4, 6]]

// -----

// B is [N, K] but trans_b is not set.
func.func @f(%a: memref<4x8xf32, "sram">, %b: memref<6x8xf32, "sram">, %c: memref<4x6xf32, "sram">) {
  npu_compute.matmul %a, %b -> %c : memref<4x8xf32, "sram">, memref<6x8xf32, "sram"> -> memref<4x6xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.matmul': inner dimensions differ (8 vs 6)

// -----

func.func @f(%a: memref<4x8xf32, "sram">, %b: memref<8x6xf32, "sram">, %c: memref<6x4xf32, "sram">) {
  npu_compute.matmul %a, %b -> %c : memref<4x8xf32, "sram">, memref<8x6xf32, "sram"> -> memref<6x4xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.matmul': out must be [4, 6] and the batch dims of a and b equal to it or 1, got [[4, 8], [8, 6], [6, 4]]

// -----

func.func @f(%x: memref<1x3x10x10xf32, "sram">, %w: memref<4x2x3x3xf32, "sram">, %o: memref<1x4x8x8xf32, "sram">) {
  npu_compute.conv2d %x, %w -> %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<1x3x10x10xf32, "sram">, memref<4x2x3x3xf32, "sram"> -> memref<1x4x8x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.conv2d': input tile has 3 channels, weight tile expects 2 x group 1

// -----

// The input tile is taken as already padded: 10 - 3 + 1 = 8.
func.func @f(%x: memref<1x3x10x10xf32, "sram">, %w: memref<4x3x3x3xf32, "sram">, %o: memref<1x4x10x10xf32, "sram">) {
  npu_compute.conv2d %x, %w -> %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<1x3x10x10xf32, "sram">, memref<4x3x3x3xf32, "sram"> -> memref<1x4x10x10xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.conv2d': out tile must be [1, 4, 8, 8], got [1, 4, 10, 10]

// -----

func.func @f(%a: memref<4x8xf32, "sram">) {
  npu_compute.eltwise add %a -> %a : memref<4x8xf32, "sram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.eltwise': 'add' takes 2 inputs, got 1

// -----

// Inputs broadcast to `out`, never the other way round.
func.func @f(%a: memref<4x8xf32, "sram">, %b: memref<8x8xf32, "sram">) {
  npu_compute.eltwise relu %b -> %a : memref<8x8xf32, "sram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.eltwise': inputs do not broadcast to out [4, 8]

// -----

func.func @f(%a: memref<1x1x8x8xf32, "sram">, %o: memref<1x1x8x8xf32, "sram">) {
  npu_compute.pool max %a -> %o {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : memref<1x1x8x8xf32, "sram"> -> memref<1x1x8x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.pool': out tile must be [1, 1, 4, 4], got [1, 1, 8, 8]

// -----

builtin.module {
  func.func @f(%x: memref<1x3x10x10xf32, "sram">, %w: memref<4x3x3x3xf32, "sram">, %o: memref<1x4x8x8xf32, "sram">) {
    npu_compute.conv2d %x, %w -> %o {strides = array<i64: 0, 1>, dilations = array<i64: 1, 1>} : memref<1x3x10x10xf32, "sram">, memref<4x3x3x3xf32, "sram"> -> memref<1x4x8x8xf32, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.conv2d': strides must be positive, got [0, 1]

// -----

builtin.module {
  func.func @f(%x: memref<3x3xf32, "sram">, %w: memref<4x3xf32, "sram">, %o: memref<4x8xf32, "sram">) {
    npu_compute.conv2d %x, %w -> %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<3x3xf32, "sram">, memref<4x3xf32, "sram"> -> memref<4x8xf32, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.conv2d': weight and out tiles must be 4-D, got [4, 3] and [4, 8]

// -----

builtin.module {
  func.func @f(%x: memref<8x8xf32, "sram">, %o: memref<4x4xf32, "sram">) {
    npu_compute.pool max %x -> %o {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : memref<8x8xf32, "sram"> -> memref<4x4xf32, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.pool': input must be 4-D NCHW, got shape [8, 8]

// -----

builtin.module {
  func.func @f(%x: memref<4xi32, "sram">, %o: memref<4xf32, "sram">) {
    npu_compute.eltwise relu %x -> %o : memref<4xi32, "sram"> -> memref<4xf32, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.eltwise': operand #0 has element type i32; this op takes f32, f16, bf16

// -----

// Integers only for the eltwise functions exact on them (copy, max, min), in one type.
builtin.module {
  func.func @f(%x: memref<4xi8, "sram">, %o: memref<4xi8, "sram">) {
    npu_compute.eltwise relu %x -> %o : memref<4xi8, "sram"> -> memref<4xi8, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.eltwise': operand #0 has element type i8; this op takes f32, f16, bf16

// -----

builtin.module {
  func.func @f(%x: memref<4xf16, "sram">, %o: memref<4xf32, "sram">) {
    npu_compute.eltwise copy %x -> %o : memref<4xf16, "sram"> -> memref<4xf32, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.eltwise': operand #1 is f32 but operand #0 is f16; this op computes in one element type (insert a cast)

// -----

// The cube multiplies two of one float type, or two 8-bit integers into i32.
builtin.module {
  func.func @f(%a: memref<4x8xi8, "sram">, %b: memref<8x6xf16, "sram">, %c: memref<4x6xf32, "sram">) {
    npu_compute.matmul %a, %b -> %c : memref<4x8xi8, "sram">, memref<8x6xf16, "sram"> -> memref<4x6xf32, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.matmul': operands hold i8 and f16; the cube multiplies two of one float type or two 8-bit integers (i8/ui8)

// -----

builtin.module {
  func.func @f(%a: memref<4x8xi8, "sram">, %b: memref<8x6xi8, "sram">, %c: memref<4x6xi8, "sram">) {
    npu_compute.matmul %a, %b -> %c : memref<4x8xi8, "sram">, memref<8x6xi8, "sram"> -> memref<4x6xi8, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.matmul': 8-bit integer operands accumulate into an i32 out, got i8

// -----

builtin.module {
  func.func @f(%a: memref<4x8xf16, "sram">, %b: memref<8x6xf16, "sram">, %c: memref<4x6xbf16, "sram">) {
    npu_compute.matmul %a, %b -> %c : memref<4x8xf16, "sram">, memref<8x6xf16, "sram"> -> memref<4x6xbf16, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.matmul': f16 operands write a f16 or f32 out, got bf16

// -----

builtin.module {
  func.func @f(%x: memref<1x2x4x4xui8, "sram">, %w: memref<2x2x3x3xi8, "sram">, %o: memref<1x2x2x2xi32, "sram">) {
    npu_compute.conv2d %x, %w -> %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, input_zero_point = 300 : i64} : memref<1x2x4x4xui8, "sram">, memref<2x2x3x3xi8, "sram"> -> memref<1x2x2x2xi32, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.conv2d': input_zero_point 300 is outside [0, 255] (ui8)

// -----

builtin.module {
  func.func @f(%a: memref<4x8xf32, "sram">, %b: memref<8x6xf32, "sram">, %c: memref<4x6xf32, "sram">) {
    npu_compute.matmul %a, %b -> %c {weight_zero_point = 1 : i64} : memref<4x8xf32, "sram">, memref<8x6xf32, "sram"> -> memref<4x6xf32, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.matmul': weight_zero_point must be an integer attribute of an op on 8-bit integers

// -----

// A fill of an integer buffer writes an integer of its range.
builtin.module {
  func.func @f(%o: memref<4xi8, "sram">) {
    npu_compute.fill %o {value = 128.0 : f32} : memref<4xi8, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.fill': value 128 is not an integer in [-128, 127] (i8)

// -----

// A crop (negative pads) that leaves the 3x3 window no rows: no output shape fits.
builtin.module {
  func.func @f(%x: memref<1x4x4x4xf32, "sram">, %w: memref<4x4x3x3xf32, "sram">, %o: memref<1x4x1x2xf32, "sram">) {
    npu_compute.conv2d %x, %w -> %o {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: -1, 0, -1, 0>} : memref<1x4x4x4xf32, "sram">, memref<4x4x3x3xf32, "sram"> -> memref<1x4x1x2xf32, "sram">
    func.return
  }
}
// CHECK: 'npu_compute.conv2d': out tile must be ?, got [1, 4, 1, 2]

// -----

// The cube unit cannot write the buffer it reads.
func.func @f(%a: memref<4x4xf32, "sram">, %b: memref<4x4xf32, "sram">) {
  npu_compute.matmul %a, %b -> %a : memref<4x4xf32, "sram">, memref<4x4xf32, "sram"> -> memref<4x4xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.matmul': out is also operand #0: the cube unit cannot write the buffer it reads

// -----

func.func @f(%x: memref<1x4x4x4xf32, "sram">, %w: memref<4x4x1x1xf32, "sram">) {
  npu_compute.conv2d %x, %w -> %x {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : memref<1x4x4x4xf32, "sram">, memref<4x4x1x1xf32, "sram"> -> memref<1x4x4x4xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.conv2d': out is also operand #0: the cube unit cannot write the buffer it reads

// -----

// A pool reads windows of rows it would already have overwritten.
func.func @f(%x: memref<1x1x8x8xf32, "sram">) {
  npu_compute.pool max %x -> %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : memref<1x1x8x8xf32, "sram"> -> memref<1x1x8x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.pool': out is also operand #0: the vector unit cannot write the buffer it reads

// -----

// apply passes the graph op's operands: batchnorm takes 5.
func.func @f(%x: memref<1x4x8xf32, "sram">, %o: memref<1x4x8xf32, "sram">) {
  npu_compute.apply "npu_graph.batchnorm" %x -> %o {attrs = {}} : memref<1x4x8xf32, "sram"> -> memref<1x4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.apply': 'npu_graph.batchnorm' takes 5 inputs, got 1

// -----

// eltwise's cube_output (the cube's output stage) is for a bias add of an accumulator in
// place only: not another function, not out of place, not a bias varying along two axes.
func.func @f(%x: memref<4x8xf32, "sram">, %b: memref<1x8xf32, "sram">) {
  npu_compute.eltwise mul %x, %b -> %x {cube_output} : memref<4x8xf32, "sram">, memref<1x8xf32, "sram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.eltwise': cube_output is for the bias add of an accumulator in place (add %acc, %bias -> %acc, the bias varying along one axis at most)

// -----

func.func @f(%x: memref<4x8xf32, "sram">, %b: memref<1x8xf32, "sram">, %o: memref<4x8xf32, "sram">) {
  npu_compute.eltwise add %x, %b -> %o {cube_output} : memref<4x8xf32, "sram">, memref<1x8xf32, "sram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.eltwise': cube_output is for the bias add of an accumulator in place (add %acc, %bias -> %acc, the bias varying along one axis at most)

// -----

func.func @f(%x: memref<2x4x8xf32, "sram">, %b: memref<2x1x8xf32, "sram">) {
  npu_compute.eltwise add %x, %b -> %x {cube_output} : memref<2x4x8xf32, "sram">, memref<2x1x8xf32, "sram"> -> memref<2x4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.eltwise': cube_output is for the bias add of an accumulator in place (add %acc, %bias -> %acc, the bias varying along one axis at most)

// -----

// apply's cube_output (the cube's output stage) is for a requantize of an accumulator only.
func.func @f(%x: memref<4x8xf32, "sram">, %o: memref<4x8xf32, "sram">) {
  npu_compute.apply "npu_graph.softmax" %x -> %o {attrs = {axis = 1 : i64}, cube_output} : memref<4x8xf32, "sram"> -> memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.apply': cube_output is for a requantize of a cube op's accumulator, not 'npu_graph.softmax'

// -----

func.func @f(%x: memref<4x8xf32, "sram">) {
  %t = npu_compute.to_tensor %x : memref<4x8xf32, "sram"> -> tensor<8x4xf32>
  func.return
}
// CHECK: 'npu_compute.to_tensor': tensor<8x4xf32> does not have the shape of the buffer memref<4x8xf32, "sram">

// -----

func.func @f(%x: memref<4x8xf32>) {
  %t = npu_compute.to_tensor %x : memref<4x8xf32> -> tensor<4x8xf32>
  func.return
}
// CHECK: 'npu_compute.to_tensor': the buffer must be in memory space "dram" or "sram", got memref<4x8xf32>

// -----

func.func @f(%x: memref<4x8xf32, "sram">, %o: memref<4x4xf32, "sram">) {
  %t = npu_compute.to_tensor %x : memref<4x8xf32, "sram"> -> tensor<4x8xf32>
  npu_compute.materialize %t into %o : tensor<4x8xf32>, memref<4x4xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.materialize': tensor<4x8xf32> does not have the shape of the buffer memref<4x4xf32, "sram">

// -----

// A fence orders two units: the same one twice is refused.
func.func @f(%a: memref<4x8xf32, "sram">) {
  npu_compute.fence cube -> cube on %a : memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.fence': src and dst are both cube: a unit runs its own queue in order

// -----

// A DMA is awaited with npu_dma.wait, never fenced after.
func.func @f(%a: memref<4x8xf32, "sram">) {
  npu_compute.fence dma -> vector on %a : memref<4x8xf32, "sram">
  func.return
}
// CHECK: 'npu_compute.fence': src must be cube or vector (a DMA is awaited with npu_dma.wait), got dma

// -----

func.func @f(%a: memref<4x8xf32, "dram">) {
  npu_compute.fence cube -> dma on %a : memref<4x8xf32, "dram">
  func.return
}
// CHECK: 'npu_compute.fence': buffers must be "sram" memrefs, got memref<4x8xf32, "dram">
