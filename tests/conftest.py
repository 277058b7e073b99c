"""Every test run simulates with the memory sanitizer on (`sim.sanitizer`): a
read that does not find the value it names fails the test. The compile cache is off
(`NPU_NO_CACHE=1`: tests that patch the compiler in-process must not be served an
earlier compile); tests/test_compile_cache.py turns it on with --cache-dir. Tile searches
run in this process (`NPU_COMPILE_JOBS=1`); tests/test_tile_parallel.py forks them."""

import os

os.environ["NPU_SANITIZE"] = "1"
os.environ["NPU_NO_CACHE"] = "1"
os.environ["NPU_COMPILE_JOBS"] = "1"  # (pytest-xdist already uses the cores; test_tile_parallel forks)

# onnxruntime, the numerical reference, in its exact integer mode where it can build a
# model that way (tools/testkit/ort_exact.py: its default u8 x s8 kernels saturate on
# CPUs without VNNI)
from tools.testkit.ort_exact import install as _exact_onnxruntime  # noqa: E402

_exact_onnxruntime()
