// No dialect 'tosa' is registered.
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = tosa.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}
