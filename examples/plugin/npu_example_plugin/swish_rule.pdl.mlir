// The example plugin's fusion rule `example-swish`: x * sigmoid(beta * x), as
// example-lower-swish leaves it, becomes one kernel. npu-fuse applies it before its
// built-in rules; npu-fuse{disable=example-swish} switches it off.
pdl.pattern @swish : benefit(1) {
  %t = pdl.type
  %x = pdl.operand
  %beta = pdl.operand
  %scale = pdl.operation "npu_graph.mul"(%x, %beta : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  %scaled = pdl.result 0 of %scale
  %sig = pdl.operation "npu_graph.sigmoid"(%scaled : !pdl.value) -> (%t : !pdl.type)
  %gate = pdl.result 0 of %sig
  %out = pdl.operation "npu_graph.mul"(%x, %gate : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "npu.has_one_use"(%scale : !pdl.operation)
  pdl.apply_native_constraint "npu.has_one_use"(%sig : !pdl.operation)
  pdl.apply_native_constraint "npu.not_fused"(%scale : !pdl.operation)
  pdl.rewrite %out {
    %fused = pdl.apply_native_rewrite "npu.fuse"(%scale, %sig, %out : !pdl.operation, !pdl.operation, !pdl.operation) : !pdl.operation
  }
}
