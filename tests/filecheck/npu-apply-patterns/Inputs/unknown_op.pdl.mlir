pdl.pattern @unknown : benefit(1) {
  %t = pdl.type
  %x = pdl.operand
  %op = pdl.operation "npu_graph.rleu"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.rewrite %op {
    pdl.replace %op with (%x : !pdl.value)
  }
}
