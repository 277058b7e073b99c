// Two patterns that undo each other: abs -> neg and neg -> abs.
pdl.pattern @abs_to_neg : benefit(1) {
  %type = pdl.type
  %x = pdl.operand
  %r = pdl.operation "npu_graph.abs"(%x : !pdl.value) -> (%type : !pdl.type)
  pdl.rewrite %r {
    %new = pdl.operation "npu_graph.neg"(%x : !pdl.value) -> (%type : !pdl.type)
    pdl.replace %r with %new
  }
}
pdl.pattern @neg_to_abs : benefit(1) {
  %type = pdl.type
  %x = pdl.operand
  %r = pdl.operation "npu_graph.neg"(%x : !pdl.value) -> (%type : !pdl.type)
  pdl.rewrite %r {
    %new = pdl.operation "npu_graph.abs"(%x : !pdl.value) -> (%type : !pdl.type)
    pdl.replace %r with %new
  }
}
