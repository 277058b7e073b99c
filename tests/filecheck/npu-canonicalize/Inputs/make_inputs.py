"""Regenerate the weight file of the npu-canonicalize lit tests (run from anywhere):

    python tests/filecheck/npu-canonicalize/Inputs/make_inputs.py

weights.npz holds
- `ones` [4, 16]: all 1.0;  `zeros` [4, 16]: all 0.0;
- `almost_ones` [4, 16]: all 1.0 except one 2.0 (must not be treated as neutral).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    almost = np.ones((4, 16), np.float32)
    almost[3, 15] = 2.0
    np.savez(HERE / "weights.npz", ones=np.ones((4, 16), np.float32), zeros=np.zeros((4, 16), np.float32),
             almost_ones=almost)


if __name__ == "__main__":
    main()
