"""Weights live outside the IR text, in a side file named by the module
attribute `npu.weights` (an `.npz` keyed by weight name; a relative path is
resolved against the directory of the `.mlir` file that names it).
`npu_graph.constant {weight = "fc.w"}` and `npu_task.weight "fc.w"` refer to keys.
"""

from __future__ import annotations

import os
import zipfile

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr

WEIGHTS_ATTR = "npu.weights"


class WeightsError(ValueError):
    """The weight side file is missing, unreadable or lacks a key (user error)."""


def weights_path(module: ModuleOp, base_dir: str | None) -> str | None:
    attr = module.attributes.get(WEIGHTS_ATTR)
    if not isinstance(attr, StringAttr):
        return None
    path = attr.data
    if not os.path.isabs(path) and base_dir:
        path = os.path.join(base_dir, path)
    return path


def load_weights(module: ModuleOp, base_dir: str | None) -> dict[str, np.ndarray]:
    """All weights the module names (empty when it names no file)."""
    path = weights_path(module, base_dir)
    if path is None:
        return {}
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise WeightsError(f"cannot read weight file '{path}' (module attribute {WEIGHTS_ATTR}): {e}") from None


def save_weights(path: str, weights: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:
        np.savez(f, **weights)


def relocate(module: ModuleOp, from_dir: str | None, to_dir: str | None) -> None:
    """Rewrite `npu.weights` so it still resolves when the module is written to `to_dir`."""
    path = weights_path(module, from_dir)
    if path is None:
        return
    if to_dir is None:
        new = os.path.abspath(path)
    else:
        new = os.path.relpath(os.path.abspath(path), os.path.abspath(to_dir))
    module.attributes[WEIGHTS_ATTR] = StringAttr(new)
