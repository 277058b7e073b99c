// A tensor type without its closing '>'.
func.func @main(%x: tensor<2x8xf32) -> tensor<2x8xf32> {
  func.return %x : tensor<2x8xf32>
}
