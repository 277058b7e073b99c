"""Graph-level passes on `npu_graph` (canonicalize, fold, shape inference, fusion) and the
numpy reference evaluator of graph modules."""
