"""Regenerate the weight file of the npu-constant-fold lit tests (run from anywhere):

    python tests/filecheck/npu-constant-fold/Inputs/make_inputs.py

weights.npz holds `w` [4, 8] = 0, 1, ..., 31 (row-major) and `b` [8] = 0.5.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    np.savez(HERE / "weights.npz", w=np.arange(32, dtype=np.float32).reshape(4, 8),
             b=np.full(8, 0.5, np.float32))


if __name__ == "__main__":
    main()
