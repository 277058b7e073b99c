// An algebraic rewrite at graph level: |-x| = |x|, so abs(neg(x)) reads x directly
// (the negation, if nothing else reads it, is left for npu-dce).
//   npu-opt model.mlir -p 'npu-apply-patterns{file=examples/patterns/abs_of_neg.pdl.mlir}'
pdl.pattern @abs_of_neg : benefit(1) {
  %type = pdl.type
  %x = pdl.operand
  %neg = pdl.operation "npu_graph.neg"(%x : !pdl.value) -> (%type : !pdl.type)
  %negated = pdl.result 0 of %neg
  %abs = pdl.operation "npu_graph.abs"(%negated : !pdl.value) -> (%type : !pdl.type)
  pdl.rewrite %abs {
    %new = pdl.operation "npu_graph.abs"(%x : !pdl.value) -> (%type : !pdl.type)
    pdl.replace %abs with %new
  }
}
