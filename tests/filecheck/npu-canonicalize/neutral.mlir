// RUN: %opt %s --split-input-file -p npu-canonicalize | filecheck %s
// npu-canonicalize removes x*1, 1*x, x+0, 0+x, x-0 and x/1 when the constant is all
// ones / zeros (inline or a weight) and does not broadcast x to a bigger shape.
// (Identity and Dropout never reach the IR: the importer drops them.)

// x * 1 with a broadcast scalar constant, then 1 * x: both vanish.
// CHECK-LABEL: func.func @mul_one
// CHECK-NEXT:    %r = npu_graph.relu %x
// CHECK-NEXT:    func.return %r
func.func @mul_one(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %one = npu_graph.constant {value = dense<1.0> : tensor<1xf32>} : tensor<1xf32>
  %ones = npu_graph.constant {value = dense<1.0> : tensor<16xf32>} : tensor<16xf32>
  %a = npu_graph.mul %x, %one : (tensor<4x16xf32>, tensor<1xf32>) -> tensor<4x16xf32>
  %b = npu_graph.mul %ones, %a : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = npu_graph.relu %b : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}

// -----

// x + 0, 0 + x, x - 0 and x / 1.
// CHECK-LABEL: func.func @add_sub_div
// CHECK-NEXT:    func.return %x
func.func @add_sub_div(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %zero = npu_graph.constant {value = dense<0.0> : tensor<1x1xf32>} : tensor<1x1xf32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<1xf32>} : tensor<1xf32>
  %a = npu_graph.add %x, %zero : (tensor<4x16xf32>, tensor<1x1xf32>) -> tensor<4x16xf32>
  %b = npu_graph.add %zero, %a : (tensor<1x1xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = npu_graph.sub %b, %zero : (tensor<4x16xf32>, tensor<1x1xf32>) -> tensor<4x16xf32>
  %d = npu_graph.div %c, %one : (tensor<4x16xf32>, tensor<1xf32>) -> tensor<4x16xf32>
  func.return %d : tensor<4x16xf32>
}

// -----

// The neutral constant is a weight of the module's weight file.
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @weights(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %ones = npu_graph.constant {weight = "ones"} : tensor<4x16xf32>
    %zeros = npu_graph.constant {weight = "zeros"} : tensor<4x16xf32>
    %a = npu_graph.mul %x, %ones : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %b = npu_graph.add %zeros, %a : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    func.return %b : tensor<4x16xf32>
  }
}
// CHECK-LABEL: func.func @weights
// CHECK-NEXT:    func.return %x

// -----

// Does not fire: a weight that is not all ones, and a weight the file does not hold.
builtin.module attributes {npu.weights = "Inputs/weights.npz"} {
  func.func @not_neutral_weights(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %w = npu_graph.constant {weight = "almost_ones"} : tensor<4x16xf32>
    %u = npu_graph.constant {weight = "unknown"} : tensor<4x16xf32>
    %a = npu_graph.mul %x, %w : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %b = npu_graph.mul %a, %u : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    func.return %b : tensor<4x16xf32>
  }
}
// CHECK-LABEL: func.func @not_neutral_weights
// CHECK:         %a = npu_graph.mul %x, %w
// CHECK-NEXT:    %b = npu_graph.mul %a, %u
// CHECK-NEXT:    func.return %b

// -----

// Does not fire: 0 - x and 1 / x (the constant is not on the neutral side), x * 2,
// and a constant that is not a splat.
// CHECK-LABEL: func.func @not_neutral
// CHECK:         %a = npu_graph.sub %zero, %x
// CHECK-NEXT:    %b = npu_graph.div %one, %a
// CHECK-NEXT:    %c = npu_graph.mul %b, %two
// CHECK-NEXT:    %d = npu_graph.mul %c, %mixed
// CHECK-NEXT:    func.return %d
func.func @not_neutral(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %zero = npu_graph.constant {value = dense<0.0> : tensor<1xf32>} : tensor<1xf32>
  %one = npu_graph.constant {value = dense<1.0> : tensor<1xf32>} : tensor<1xf32>
  %two = npu_graph.constant {value = dense<2.0> : tensor<1xf32>} : tensor<1xf32>
  %mixed = npu_graph.constant {value = dense<[[1.0], [1.0], [1.0], [0.5]]> : tensor<4x1xf32>} : tensor<4x1xf32>
  %a = npu_graph.sub %zero, %x : (tensor<1xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = npu_graph.div %one, %a : (tensor<1xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = npu_graph.mul %b, %two : (tensor<4x16xf32>, tensor<1xf32>) -> tensor<4x16xf32>
  %d = npu_graph.mul %c, %mixed : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  func.return %d : tensor<4x16xf32>
}

// -----

// Does not fire: the ones broadcast x to a bigger shape, so the mul is not x; and
// x * y with no constant.
// CHECK-LABEL: func.func @broadcasting
// CHECK:         %a = npu_graph.mul %x, %ones : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %b = npu_graph.mul %a, %y
// CHECK-NEXT:    func.return %b
func.func @broadcasting(%x: tensor<16xf32>, %y: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %ones = npu_graph.constant {value = dense<1.0> : tensor<4x16xf32>} : tensor<4x16xf32>
  %a = npu_graph.mul %x, %ones : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = npu_graph.mul %a, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %b : tensor<4x16xf32>
}
