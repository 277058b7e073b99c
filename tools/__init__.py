"""Command-line tools: npu-import, npu-opt, npu-run, npu-memviz (each module has `main(argv) -> int`)."""
