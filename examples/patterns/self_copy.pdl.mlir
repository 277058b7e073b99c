// A DMA peephole: a 2-D copy of a buffer onto itself at the same offsets, with no
// pad_value or clip, moves nothing; it and the wait for it go.
//   npu-opt tasks.mlir -p 'npu-apply-patterns{file=examples/patterns/self_copy.pdl.mlir}'
pdl.pattern @self_copy : benefit(1) {
  %tok_type = pdl.type
  %buf = pdl.operand
  %i = pdl.operand
  %j = pdl.operand
  %copy = pdl.operation "npu_dma.copy"(%buf, %buf, %i, %j, %i, %j : !pdl.value, !pdl.value, !pdl.value, !pdl.value, !pdl.value, !pdl.value) -> (%tok_type : !pdl.type)
  %tok = pdl.result 0 of %copy
  %wait = pdl.operation "npu_dma.wait"(%tok : !pdl.value)
  pdl.apply_native_constraint "npu.plain_copy"(%copy : !pdl.operation)
  pdl.apply_native_constraint "npu.has_one_use"(%copy : !pdl.operation)
  pdl.rewrite %wait {
    pdl.erase %wait
    pdl.erase %copy
  }
}
