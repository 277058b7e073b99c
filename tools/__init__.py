"""Command-line tools: npu-import, npu-opt, npu-run (each module has `main(argv) -> int`)."""
