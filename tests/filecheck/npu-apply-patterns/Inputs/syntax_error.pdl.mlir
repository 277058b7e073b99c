pdl.pattern @broken : benefit(1) {
  %x = pdl.operand
  %op = pdl.operation "npu_graph.relu"(%x : !pdl.value) -> (
}
