// A loop bound that names the loop's own induction variable (xDSL left it a forward
// reference, and the verifier then failed with a ValueError).
func.func @main(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %i step %c1 {
  }
  func.return
}
