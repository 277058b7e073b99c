// A fusion rule: an add whose only reader is a sigmoid becomes one kernel with it
// (`npu.fuse`, lowering/patterns/native.py: the chain as one npu_graph.fused op of
// rule `pdl`, which npu-tile tiles like any elementwise kernel). Run it before
// npu-fuse (npu-fuse leaves kernels that are already fused alone).
//   npu-opt model.mlir -p 'npu-apply-patterns{file=examples/patterns/fuse_add_sigmoid.pdl.mlir},npu-default'
pdl.pattern @fuse_add_sigmoid : benefit(1) {
  %type = pdl.type
  %a = pdl.operand
  %b = pdl.operand
  %add = pdl.operation "npu_graph.add"(%a, %b : !pdl.value, !pdl.value) -> (%type : !pdl.type)
  %sum = pdl.result 0 of %add
  %sig = pdl.operation "npu_graph.sigmoid"(%sum : !pdl.value) -> (%type : !pdl.type)
  pdl.apply_native_constraint "npu.has_one_use"(%add : !pdl.operation)
  pdl.apply_native_constraint "npu.not_fused"(%add : !pdl.operation)
  pdl.rewrite %sig {
    %fused = pdl.apply_native_rewrite "npu.fuse"(%add, %sig : !pdl.operation, !pdl.operation) : !pdl.operation
  }
}
