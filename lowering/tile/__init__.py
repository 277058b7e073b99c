"""Tiling: the `npu-tile` and `npu-layer-group` passes and the analyses they use (tile
search, cost model, layer/strip group plans, roofline)."""
