"""Weights live outside the IR text, in a side file named by the module
attribute `npu.weights` (an `.npz` keyed by weight name; a relative path is
resolved against the directory of the `.mlir` file that names it).
`npu_graph.constant {weight = "fc.w"}` and `npu_task.weight "fc.w"` refer to keys.
"""

from __future__ import annotations

import os
import weakref
import zipfile
from collections.abc import Mapping
from typing import IO

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr

from npu_dialects.recipe import Expr, evaluate, uniform_value

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
        return read_npz(path)
    except ValueError as e:
        raise WeightsError(f"cannot read weight file '{path}' (module attribute {WEIGHTS_ATTR}): {e}") from None


def read_npz(path: str) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` file by name. Raises ValueError with one line of reason: the
    file is missing or unreadable, is not a zip of `.npy` arrays (an `.npy`, text, cut
    short), holds pickled objects, or a member is corrupted or declares in its header
    more data than it holds (checked before any data is read: `npu_dialects.npz`)."""
    from npu_dialects.npz import read_npz_checked
    return {k: _typed(a) for k, a in read_npz_checked(path).items()}


def _typed(a: np.ndarray) -> np.ndarray:
    """A bf16 array read back: `.npy` stores ml_dtypes.bfloat16 as a 2-byte void type."""
    return a.view(ml_dtypes.bfloat16) if a.dtype == np.dtype("V2") else a


KEPT_DTYPES = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.int8), np.dtype(np.uint8),
               np.dtype(np.int32))
"""Element types a weight keeps as given (`store_dtype`); anything else is stored as
float32, as before typed tensors (float64 results of folding, int64 indices...)."""


def store_dtype(value: np.ndarray) -> np.dtype:
    """The dtype a weight holding `value` is stored in: its own when the chip holds it
    (f16, bf16, i8, ui8, i32; f32 of course), else float32."""
    dt = np.asarray(value).dtype
    return dt if dt in KEPT_DTYPES else np.dtype(np.float32)


def save_weights(path: str, weights: dict[str, np.ndarray]) -> None:
    """`weights` as the `.npz` file `path`, written atomically (`npu_dialects.files`)."""
    from npu_dialects.files import write_atomic
    write_atomic(path, lambda f: save_npz(f, weights))


def save_npz(file: IO[bytes], arrays: Mapping[str, np.ndarray]) -> None:
    """Write `arrays` as an uncompressed `.npz` keyed by name, as `np.savez(file, **arrays)`
    would for any key: savez takes a key `file` for its own argument (TypeError) and a
    key `allow_pickle` for its flag (that array is silently left out)."""
    with zipfile.ZipFile(file, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, array in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


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


# --------------------------------------------------------------------------------------
# The weights of a module while passes run. Passes that need weight values
# (constant folding, BatchNorm folding) read them with `weights_of(module)` and
# add new tensors with `add_weight`; the tool that wrote the module out saves
# the store next to it when `is_dirty(module)`.
# --------------------------------------------------------------------------------------


class ReadLog(dict):
    """A weight store that notes the keys whose values were read (`reads`): what the
    compile of a model depends on beyond its structure (`tools/compile_cache.py`,
    level 0). Reads through `peek` (recipes, packaging) are not noted."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads: set[str] = set()
        self.uniform: dict[str, float | None] = {}  # (key -> `uniform_value` a pass tested)

    def __getitem__(self, key: str) -> np.ndarray:
        self.reads.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default=None):  # type: ignore[override]
        if key in self:
            self.reads.add(key)
        return super().get(key, default)

    def values(self):  # type: ignore[override]
        self.reads.update(self.keys())
        return super().values()

    def items(self):  # type: ignore[override]
        self.reads.update(self.keys())
        return super().items()

    def peek(self, key: str) -> np.ndarray:
        """The value of `key`, not noted as read."""
        return super().__getitem__(key)


def peek(store: Mapping[str, np.ndarray], key: str) -> np.ndarray:
    """`store[key]` without noting the read (`ReadLog.peek`) when the store logs them."""
    return store.peek(key) if isinstance(store, ReadLog) else store[key]


def test_uniform(store: Mapping[str, np.ndarray], key: str, data: np.ndarray) -> float | None:
    """`uniform_value(data)` of the weight `key` (`data`: its value as a pass reads it),
    noted as what the pass depends on instead of the value itself."""
    result = uniform_value(data)
    if isinstance(store, ReadLog):
        store.uniform[key] = result
    return result


def note_reads(module: ModuleOp, keys) -> None:
    """Note `keys` as read by value (a pass that put their derived values in the IR)."""
    store = weights_of(module)
    if isinstance(store, ReadLog):
        store.reads.update(keys)


class _Store:
    def __init__(self, weights: dict[str, np.ndarray] | None, loader=None):
        self._weights = weights
        self._loader = loader
        self.dirty = False
        self.recipes: dict[str, Expr] = {}

    @property
    def weights(self) -> dict[str, np.ndarray]:
        if self._weights is None:
            self._weights = self._loader() if self._loader else {}
            self._loader = None
        return self._weights


_STORES: "weakref.WeakKeyDictionary[ModuleOp, _Store]" = weakref.WeakKeyDictionary()


def attach_weights(module: ModuleOp, weights: dict[str, np.ndarray] | None = None,
                   base_dir: str | None = None) -> None:
    """Give `module` its weights: a dict, or (lazily) its side file resolved against `base_dir`."""
    if weights is not None:
        old = _STORES.get(module)
        _STORES[module] = _Store(weights)
        if old is not None and old._weights is weights:  # (the same store again: what passes made stays known)
            _STORES[module].recipes, _STORES[module].dirty = old.recipes, old.dirty
    else:
        _STORES[module] = _Store(None, lambda: load_weights(module, base_dir))


def weights_of(module: ModuleOp) -> dict[str, np.ndarray]:
    """The module's weights (loaded from its side file on first use, relative to the cwd
    when nothing was attached)."""
    if module not in _STORES:
        attach_weights(module, None, os.getcwd())
    return _STORES[module].weights


Recipe = tuple[int, list[tuple[str | list[float], int]]]
"""A pure relayout of other weights: (float32 elements, [(source weight key or its
inline values, element offset)]); the rest of the elements are zero (`as_expr`)."""


def as_expr(recipe: Recipe | Expr) -> Expr:
    """A recipe as an expression (`npu_dialects.recipe`): a relayout becomes `place`."""
    if isinstance(recipe, dict):
        return recipe
    size, parts = recipe
    args = [{"w": src} if isinstance(src, str) else {"c": list(src), "dtype": "float32", "shape": [len(src)]}
            for src, _ in parts]
    return {"op": "place", "args": args, "size": size, "offsets": [o for _, o in parts]}


def add_weight(module: ModuleOp, hint: str, value: np.ndarray, recipe: Recipe | Expr | None = None) -> str:
    """Store a new weight (e.g. a folded constant) and return its unique key. It keeps
    its element type when the chip holds it (`store_dtype`), else becomes float32. A
    `recipe` says how to compute it again from other weights (`rebuild`): it must be
    what computed `value` (up to that conversion, which `rebuild` repeats)."""
    store = weights_of(module)
    key, i = hint, 1
    while key in store:
        i += 1
        key = f"{hint}#{i}"
    store[key] = np.ascontiguousarray(value, dtype=store_dtype(value)).reshape(np.shape(value))  # (0-d stays 0-d)
    _STORES[module].dirty = True
    if recipe is not None:
        _STORES[module].recipes[key] = {"op": "cast", "args": [as_expr(recipe)], "dtype": str(store_dtype(value))}
    return key


def recipes_of(module: ModuleOp) -> dict[str, Expr]:
    """The recipes of the weights passes added to `module`'s store (`add_weight`)."""
    s = _STORES.get(module)
    return dict(s.recipes) if s else {}


def rebuild(recipe: Recipe | Expr, weights: Mapping[str, np.ndarray]) -> np.ndarray:
    """A weight computed again from `weights` by its recipe (KeyError: a source is missing)."""
    return evaluate(as_expr(recipe), lambda k: peek(weights, k))


def referenced_weights(module: ModuleOp) -> dict[str, np.ndarray]:
    """The weights of the store `module` still refers to (`npu_graph.constant {weight}`,
    `npu_task.weight` without an inline value), in first-use order, not copied: passes
    leave behind the originals of folded or packed weights, which a side file written
    for the module would otherwise carry too."""
    store = weights_of(module)
    keys: dict[str, None] = {}
    for op in module.walk():
        if op.name == "npu_graph.constant":
            key = op.attributes.get("weight")
        elif op.name == "npu_task.weight" and "value" not in op.attributes:
            key = op.attributes.get("key")
        else:
            continue
        if isinstance(key, StringAttr):
            keys[key.data] = None
    return {k: peek(store, k) for k in keys if k in store}


def is_dirty(module: ModuleOp) -> bool:
    """Whether passes added weights that the module's side file does not hold yet."""
    s = _STORES.get(module)
    return bool(s and s.dirty)
