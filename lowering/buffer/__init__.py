"""Bufferization: `npu_tile` kernels -> `npu_task` tasks of `npu_dma` + `npu_compute` ops."""
