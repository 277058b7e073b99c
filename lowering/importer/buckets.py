"""Shape buckets: compiling a model whose inputs have symbolic dimensions for sizes
the user chooses (the compile-time side; picking a bucket for actual inputs, padding
and slicing is `runtime/buckets.py`).

ONNX marks a dynamic input dimension with a name (`dim_param`, e.g. `x['batch', 8]`).
The compiler only handles static shapes, so every symbolic input dimension is bound
to a number before import (`import_model(model, dims={"batch": 4})`, which calls
`bind_dims`). A bucket is one such binding; `--shape-buckets` lists the buckets
(syntax under Algorithm, `parse_shape_buckets`; the first bucket is the default).

Every symbolic dimension of the model's inputs must be bound, and every dimension
named must be one of them; both are diagnosed (`OnnxImportError`, one line per
problem) naming the dimension and the inputs that carry it.

Algorithm
---------
Spec syntax (`--shape-buckets SPEC`, see `parse_shape_buckets`):

    batch=4                    one bucket
    batch=1,4,8                three buckets
    batch=1,4,8;seq=16,32      the cross product: 6 buckets (batch 1/seq 16, ...)

The flag may be given several times; the buckets are then the union of each
occurrence's cross product, which gives explicit lists without a combinatorial
explosion (`--shape-buckets 'batch=1;seq=16,128' --shape-buckets 'batch=8;seq=16'`).
Every occurrence must name the same dimensions. Values are positive integers; a
dimension name is anything without `=`, `,` or `;` (as ONNX spells it: `batch_size`,
`N`, `unk__0`). Bucket order is the order written; the first bucket is the default
(e.g. for `npu-run` with random inputs).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx
import onnx.shape_inference

from lowering.importer.onnx_import import import_model
from lowering.importer.symbolic import (
    OnnxImportError,
    bind_dims,
    binding_problems,
    quote_names,
)


class BucketSpecError(ValueError):
    """A malformed `--shape-buckets` spec (bad command-line usage: exit 2)."""


# --------------------------------------------------------------------------------------
# The spec
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShapeBuckets:
    """The buckets to compile for: `dims` in spec order, one tuple of sizes per bucket
    (in `dims` order), first bucket first, no duplicates."""

    dims: tuple[str, ...]
    buckets: tuple[tuple[int, ...], ...]

    def __len__(self) -> int:
        return len(self.buckets)

    def __iter__(self) -> Iterator[dict[str, int]]:
        return (self.binding(i) for i in range(len(self.buckets)))

    def binding(self, index: int) -> dict[str, int]:
        """Bucket `index` as {dim: size}."""
        return dict(zip(self.dims, self.buckets[index]))

    def first(self) -> dict[str, int]:
        return self.binding(0)

    def values(self, dim: str) -> list[int]:
        """The sizes `dim` takes over all buckets, ascending."""
        i = self.dims.index(dim)
        return sorted({b[i] for b in self.buckets})


_VALUE = re.compile(r"[0-9]+")


def parse_shape_buckets(specs: str | Sequence[str]) -> ShapeBuckets:
    """Parse one `--shape-buckets` spec, or several (their buckets are united).

    Raises `BucketSpecError` with a one-line message quoting the offending spec."""
    if isinstance(specs, str):
        specs = [specs]
    if not specs:
        raise BucketSpecError("no --shape-buckets spec given")
    dims: tuple[str, ...] | None = None
    first_spec = ""
    buckets: list[tuple[int, ...]] = []
    for spec in specs:
        group = _parse_group(spec)
        names = tuple(group)
        if dims is None:
            dims, first_spec = names, spec
        elif set(names) != set(dims):
            raise BucketSpecError(f"--shape-buckets '{spec}' names {quote_names(names)} but '{first_spec}' "
                                  f"names {quote_names(dims)}; every occurrence must name the same dims")
        for combo in itertools.product(*(group[d] for d in dims)):
            if combo not in buckets:
                buckets.append(combo)
    assert dims is not None
    return ShapeBuckets(dims, tuple(buckets))


def _parse_group(spec: str) -> dict[str, list[int]]:
    """`batch=1,4;seq=16` -> {"batch": [1, 4], "seq": [16]} (spec order kept)."""
    bad = f"bad --shape-buckets '{spec}'"
    group: dict[str, list[int]] = {}
    parts = [p.strip() for p in spec.split(";")]
    if not any(parts):
        raise BucketSpecError(f"{bad}: empty; expected DIM=N[,N...][;DIM=N[,N...]], e.g. 'batch=1,4,8'")
    for part in parts:
        if not part:
            continue  # tolerate a trailing ';'
        name, eq, values = part.partition("=")
        name = name.strip()
        if not eq:
            raise BucketSpecError(f"{bad}: '{part}' is not DIM=N[,N...] (e.g. 'batch=1,4,8')")
        if not name or "," in name:
            raise BucketSpecError(f"{bad}: '{part}' has no dimension name before '='")
        if name in group:
            raise BucketSpecError(f"{bad}: dimension '{name}' is given twice")
        sizes: list[int] = []
        for v in values.split(","):
            v = v.strip()
            if not _VALUE.fullmatch(v) or int(v) < 1:
                what = f"'{v}'" if v else "an empty value"
                raise BucketSpecError(f"{bad}: {what} for '{name}' is not a positive integer")
            if int(v) in sizes:
                raise BucketSpecError(f"{bad}: size {int(v)} of '{name}' is given twice")
            sizes.append(int(v))
        group[name] = sizes
    return group


# --------------------------------------------------------------------------------------
# The model's symbolic dimensions
# --------------------------------------------------------------------------------------


def check_buckets(model: onnx.ModelProto, buckets: ShapeBuckets) -> None:
    """Raise `OnnxImportError` unless `buckets` binds exactly the model's symbolic
    input dimensions (checked once, before any bucket is compiled)."""
    lines = binding_problems(model, buckets.dims)
    if lines:
        raise OnnxImportError(lines)



# --------------------------------------------------------------------------------------
# Shapes and file names
# --------------------------------------------------------------------------------------


def output_shapes(model: onnx.ModelProto, dims: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """The shape of each graph output when the model runs with `dims` (used to slice
    the outputs of a padded bucket back). Uses the declared output shapes once bound,
    then ONNX shape inference, then (for outputs neither gives statically) the
    importer's own shapes. Raises `OnnxImportError` when no shape can be found."""
    bound = bind_dims(model, dims)
    shapes: dict[str, tuple[int, ...]] = {}
    missing = [o.name for o in bound.graph.output]
    for source in (lambda: bound, lambda: onnx.shape_inference.infer_shapes(bound, data_prop=True)):
        try:
            graph = source().graph
        except Exception:  # shape inference can fail on odd models; fall through
            continue
        for vo in graph.output:
            if vo.name in missing and (shape := _static_shape(vo)) is not None:
                shapes[vo.name] = shape
        missing = [n for n in missing if n not in shapes]
        if not missing:
            return shapes
    from npu_dialects.entry import find_main
    from npu_dialects.graph import shape_of

    module, _ = import_model(model, dims=dims)
    fn = find_main(module)
    assert fn is not None
    for vo, ty in zip(bound.graph.output, fn.function_type.outputs.data):
        shapes.setdefault(vo.name, shape_of(ty))
    return shapes


def _static_shape(vi: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
        return None
    dims = vi.type.tensor_type.shape.dim
    if not all(d.HasField("dim_value") for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


def bucket_tag(binding: Mapping[str, int]) -> str:
    """`{"batch": 1, "seq": 16}` -> `batch1.seq16` (characters unsafe in file names
    become `_`)."""
    return ".".join(re.sub(r"[^A-Za-z0-9_\-]", "_", d) + str(v) for d, v in binding.items())


def bucket_path(output: str | Path, binding: Mapping[str, int]) -> Path:
    """`out.mlir` -> `out.batch1.seq16.mlir` (the IR file of one bucket)."""
    out = Path(output)
    return out.with_name(f"{out.name.removesuffix('.mlir')}.{bucket_tag(binding)}.mlir")


def describe(binding: Mapping[str, int]) -> str:
    """`{"batch": 4, "seq": 16}` -> `batch=4, seq=16`."""
    return ", ".join(f"{d}={v}" for d, v in binding.items())
