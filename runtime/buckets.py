"""Bucket dispatch on the host: pick the compiled shape bucket for actual inputs,
pad the inputs up to it and slice the outputs back (the run-time side of
`lowering/importer/buckets.py`; plain numpy, no compiler).

A model input's shape is given as a template: each axis a static size or the name
of a symbolic dimension (`("batch", 8)`). The actual inputs fix each symbolic
dimension's size (every occurrence must agree). The bucket chosen is an exact
match, else the smallest one at least as large on the padded dimensions. Padding is
only right when the padded dimension indexes independent samples (a batch, or rows
of a per-row computation) that are laid out outermost in the outputs: by listing a
dimension as padded the user asserts this. A dimension that is reduced over (a
sequence under softmax or attention) must not be padded: leave it out of the padded
set, so it matches exactly.

Algorithm
---------
The bucket chosen is

1. the first bucket that matches exactly, else
2. among the buckets whose sizes are >= the actual ones on the padded dimensions and
   equal on the others, the one with the smallest product of sizes (ties: the
   smallest sizes in spec order).

Padding appends zeros at the end of every axis named by a padded dimension, and
each output is then cut to the shape the model gives for the actual sizes, keeping
its leading corner (`out[:n0, :n1, ...]`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Template = Sequence[int | str | None]


class BucketError(Exception):
    """The actual inputs fit no bucket, disagree on a dimension or do not match the
    model's static dimensions (a user error, one line)."""


@dataclass(frozen=True)
class Dispatch:
    """The chosen bucket ({dim: size}) and the actual sizes of the inputs."""

    bucket: dict[str, int]
    actual: dict[str, int]

    @property
    def padded(self) -> bool:
        return self.bucket != self.actual


def _fmt_template(t: Template) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in t) + "]"


def actual_dims(templates: Mapping[str, Template], shapes: Mapping[str, Sequence[int]]) -> dict[str, int]:
    """The size of each symbolic dimension in the actual input `shapes` (keyed like
    `templates`). Raises BucketError for a missing input, a rank or static size that
    does not match the template, or two inputs that disagree on a dimension."""
    listing = ", ".join(f"'{n}' {_fmt_template(t)}" for n, t in templates.items())
    seen: dict[str, tuple[int, str]] = {}
    for name, tmpl in templates.items():
        if name not in shapes:
            raise BucketError(f"missing input '{name}' (the model's inputs: {listing})")
        shape = tuple(shapes[name])
        if len(shape) != len(tmpl) or any(isinstance(t, int) and t != s for t, s in zip(tmpl, shape)):
            raise BucketError(f"input '{name}' has shape {list(shape)}, expected {_fmt_template(tmpl)}")
        for t, s in zip(tmpl, shape):
            if not isinstance(t, str):
                continue
            if t in seen and seen[t][0] != s:
                raise BucketError(f"inputs disagree on '{t}': '{seen[t][1]}' has {t}={seen[t][0]} but "
                                  f"'{name}' has {t}={s}")
            seen.setdefault(t, (s, name))
    return {d: v for d, (v, _) in seen.items()}


def select_bucket(templates: Mapping[str, Template], buckets: Sequence[Mapping[str, int]],
                  shapes: Mapping[str, Sequence[int]], pad_dims: Collection[str]) -> Dispatch:
    """Choose the bucket for the actual input `shapes` (see the module docstring);
    only the dimensions in `pad_dims` may be padded. Raises BucketError naming the
    input and dimension when no bucket fits."""
    if not buckets:
        raise BucketError("no buckets to choose from")
    actual = actual_dims(templates, shapes)
    dims = list(buckets[0])
    for b in buckets:
        if all(b[d] == actual[d] for d in dims):
            return Dispatch(dict(b), {d: actual[d] for d in dims})
    fits = [b for b in buckets
            if all(b[d] == actual[d] or (d in pad_dims and b[d] > actual[d]) for d in dims)]
    if fits:
        best = min(fits, key=lambda b: (math.prod(b.values()), tuple(b[d] for d in dims)))
        return Dispatch(dict(best), {d: actual[d] for d in dims})
    raise BucketError(_no_bucket(templates, buckets, actual, pad_dims, dims))


def _no_bucket(templates: Mapping[str, Template], buckets: Sequence[Mapping[str, int]],
               actual: Mapping[str, int], pad_dims: Collection[str], dims: Sequence[str]) -> str:
    """The message for inputs outside every bucket, naming the dimension that no
    bucket can hold (or, when only the combination fails, every dimension)."""
    def carrier(d: str) -> str:
        return next(n for n, t in templates.items() if d in t)

    for d in dims:
        values = sorted({b[d] for b in buckets})
        v = actual[d]
        fits_alone = v in values or (d in pad_dims and v < values[-1])
        if not fits_alone:
            listing = ", ".join(map(str, values))
            hint = "" if d in pad_dims or v > values[-1] else f"; '{d}' is not padded, it must match"
            return f"input '{carrier(d)}' has {d}={v}, outside every bucket ({listing}){hint}"
    have = ", ".join(f"{d}={actual[d]}" for d in dims)
    listing = "; ".join(" ".join(f"{d}={b[d]}" for d in dims) for b in buckets)
    return f"the inputs have {have}, outside every bucket ({listing})"


def pad_inputs(inputs: Mapping[str, np.ndarray], templates: Mapping[str, Template],
               bucket: Mapping[str, int]) -> dict[str, np.ndarray]:
    """`inputs` with every axis named by a bucket dimension zero-padded at its end up
    to the bucket's size (inputs already of the bucket's shape are returned as is)."""
    out: dict[str, np.ndarray] = {}
    for name, x in inputs.items():
        tmpl = templates.get(name)
        x = np.asarray(x)
        if tmpl is None or len(tmpl) != x.ndim:
            out[name] = x
            continue
        widths = [(0, bucket[t] - n if isinstance(t, str) and t in bucket else 0)
                  for t, n in zip(tmpl, x.shape)]
        out[name] = np.pad(x, widths) if any(w for _, w in widths) else x
    return out


def slice_outputs(outputs: Mapping[str, np.ndarray],
                  shapes: Mapping[str, Sequence[int]]) -> dict[str, np.ndarray]:
    """Each output cut to its shape in `shapes` (its leading corner); outputs not in
    `shapes` are kept. Raises BucketError when an output is not at least that large."""
    out: dict[str, np.ndarray] = {}
    for name, y in outputs.items():
        want = shapes.get(name)
        if want is None or tuple(want) == y.shape:
            out[name] = y
            continue
        if len(want) != y.ndim or any(w > s for w, s in zip(want, y.shape)):
            raise BucketError(f"output '{name}' of the padded bucket has shape {list(y.shape)}, which "
                              f"cannot be cut back to {list(want)}")
        out[name] = np.ascontiguousarray(y[tuple(slice(0, w) for w in want)])
    return out
