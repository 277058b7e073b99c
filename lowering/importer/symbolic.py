"""Symbolic input dimensions of an ONNX model and binding them to sizes.

`symbolic_dims` lists a model's symbolic input dimensions; `bind_dims` returns a
copy with chosen sizes written in (what the importer compiles); `OnnxImportError`
is the importer's diagnostic. A leaf module: the importer and `buckets` build on it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import onnx


class OnnxImportError(Exception):
    """A model that cannot be read or imported. `lines` holds one diagnostic line per
    problem (`error: ...`; `MODEL: error: ...` from `load_model`, which knows the file),
    in graph order, then `hints` (`hint: ...`, each once); `str(e)` joins them."""

    def __init__(self, lines: str | Sequence[str], hints: Sequence[str] = ()):
        self.lines: list[str] = [lines] if isinstance(lines, str) else list(lines)
        self.hints: list[str] = list(hints)
        super().__init__("\n".join(self.lines + self.hints))

    def located(self, path: str | None) -> list[str]:
        """What a tool prints: each problem prefixed with the model file `path` (`model.onnx:
        error: node 'conv' (Conv, opset 17): ...`; as they are when None), then the hints."""
        prefix = f"{path}: " if path else ""
        return [ln if ln.startswith(prefix) else prefix + ln for ln in self.lines] + self.hints


Template = tuple[int | str | None, ...]
"""A graph input's shape with each axis a size, a symbolic dimension name, or None
(an unknown dimension without a name, which cannot be bound)."""


def quote_names(dims: Sequence[str]) -> str:
    return ", ".join(f"'{d}'" for d in dims) if dims else "nothing"


def input_templates(model: onnx.ModelProto) -> dict[str, Template]:
    """Each graph input that is not an initializer -> its shape template (inputs
    without a tensor type or shape are left out: the importer diagnoses them)."""
    inits = {i.name for i in model.graph.initializer}
    out: dict[str, Template] = {}
    for vi in model.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        out[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                             for d in tt.shape.dim)
    return out


def symbolic_dims(model: onnx.ModelProto) -> dict[str, list[str]]:
    """Symbolic dimension name -> the graph inputs that carry it, in graph order."""
    dims: dict[str, list[str]] = {}
    for name, tmpl in input_templates(model).items():
        for d in tmpl:
            if isinstance(d, str) and name not in dims.setdefault(d, []):
                dims[d].append(name)
    return dims


def inputs_phrase(inputs: Sequence[str]) -> str:
    quoted = ", ".join(f"'{i}'" for i in inputs)
    return f"input {quoted}" if len(inputs) == 1 else f"inputs {quoted}"


def binding_problems(model: onnx.ModelProto, names: Sequence[str]) -> list[str]:
    """Diagnostic lines for binding exactly the dimensions `names`: each symbolic input
    dimension left unbound, and each name that is no symbolic input dimension."""
    have = symbolic_dims(model)
    lines = []
    for d in names:
        if d not in have:
            known = (f"its symbolic dims are {quote_names(list(have))}" if have
                     else "its inputs have no symbolic dimensions")
            lines.append(f"error: the model has no symbolic dimension '{d}' ({known})")
    for d, inputs in have.items():
        if d not in names:
            lines.append(f"error: symbolic dimension '{d}' in {inputs_phrase(inputs)} is not bound; "
                         f"compile for chosen sizes with --shape-buckets {d}=N[,N...]")
    return lines


def bind_dims(model: onnx.ModelProto, dims: Mapping[str, int] | None) -> onnx.ModelProto:
    """A copy of `model` whose symbolic dimensions named in `dims` are replaced by
    their sizes, in the graph inputs, outputs and value_info (so the declared output
    shapes are checked and ONNX shape inference sees static shapes). The model itself
    is returned when it has no symbolic input dimension and `dims` is empty.

    Raises `OnnxImportError` (one line per problem) for a symbolic input dimension
    left unbound, a name that is not a symbolic input dimension, or a size < 1."""
    dims = dict(dims or {})
    lines = binding_problems(model, list(dims))
    lines += [f"error: dimension '{d}' is bound to {v!r}; sizes must be positive integers"
              for d, v in dims.items() if isinstance(v, bool) or not isinstance(v, int) or v < 1]
    if lines:
        raise OnnxImportError(lines)
    if not dims:
        return model
    bound = onnx.ModelProto()
    bound.CopyFrom(model)
    g = bound.graph
    for vi in itertools.chain(g.input, g.output, g.value_info):
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param in dims:
                d.dim_value = dims[d.dim_param]  # clears dim_param (a oneof)
    return bound
