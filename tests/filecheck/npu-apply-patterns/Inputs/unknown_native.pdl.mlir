pdl.pattern @native : benefit(1) {
  %t = pdl.type
  %x = pdl.operand
  %op = pdl.operation "npu_graph.relu"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "npu.is_positive"(%x : !pdl.value)
  pdl.rewrite %op {
    pdl.replace %op with (%x : !pdl.value)
  }
}
