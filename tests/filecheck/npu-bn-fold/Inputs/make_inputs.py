"""Regenerate the weight file of the npu-bn-fold lit tests (run from anywhere):

    python tests/filecheck/npu-bn-fold/Inputs/make_inputs.py

weights.npz holds `conv.w` [4, 3, 3, 3], `conv.b` [4] and `dw.w` [4, 1, 3, 3]
(a depthwise filter), seeded random values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(0)
    np.savez(HERE / "weights.npz",
             **{"conv.w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
                "conv.b": rng.standard_normal(4).astype(np.float32),
                "dw.w": rng.standard_normal((4, 1, 3, 3)).astype(np.float32)})


if __name__ == "__main__":
    main()
