"""ONNX operator conformance: the onnx package's node test cases of every op type the
importer supports, compiled with `npu-default`, simulated and compared with the
expected outputs; writes a support table like onnx-mlir's.

    python bench/conformance.py [--arch SPEC] [--ops Conv,Relu] [--timeout S] [--out bench/results/conformance.md]

The cases are `onnx.backend.test.case.node.collect_testcases()`: one single-node
model each, with input and expected output data. Per case:

- The cases of the element types a model may have on the device run ("float"
  column, for float32 and the integers and booleans carried as float32): every
  input and output float32, int64, int32 or bool. A case with an input or output of
  another type (float16, double, int8, uint8, strings, sequences...) is listed as
  skipped. Integer and boolean inputs are fed at run time as the runtime takes them.
- An input the importer asks to be constant ("... is computed at run time;
  only constant values are supported", e.g. a BatchNorm mean, a Pad value, the
  indices of GatherElements, an axis) becomes an initializer and the case is tried
  again: the compiler targets static graphs, where such operands are constants.
  Such cases count as passed with constant operands ("const" column).
- The importer supports opsets 7 to the installed onnx's newest (28 for onnx 1.23). A
  case outside the range is run at its edge when the node is valid there and
  onnxruntime still computes the expected outputs from the retargeted model
  ("retargeted" column); otherwise it is skipped as out of range.
- Ops without a converter that ONNX defines as a function of others (Elu, Mish,
  LogSoftmax, GroupNormalization ...) import as their function body
  (`lowering/importer/functions.py`) and are listed with their kind in the op column.
- Cases that draw random numbers are skipped: Dropout in training mode with a ratio
  above 0 (its expected outputs come from one seeded numpy draw).
- A case whose stored expected output onnxruntime does not reproduce either, and whose
  result matches onnxruntime's, passes against onnxruntime, the project's numerical
  reference ("vs ort" column; e.g. Resize with align_corners at a non-integer scale,
  where onnx's reference divides by scale x length and the spec and onnxruntime by the
  output length less one).
- Cases with a zero-size input or output are skipped: the device has no empty buffers.
- Outputs match with the acceptance tolerance of the models (rtol 1e-3, atol 1e-4
  x max |expected|; NaN and infinities must match exactly).
- A failing case never stops the script: its one-line reason (the first line of
  the compiler's diagnostic, or the exception) is recorded.

Expanded function cases (`*_expanded*`: the op written as its function body, a
graph of many nodes) have their own section: every one whose nodes all import (each
node's op has a converter or a function body, `_importable`) runs as the single-node
cases do and is listed under the op it expands; the others are counted as not
importable, with the ops they use. They are not in the op table's totals.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np
import onnx
import onnx.defs
import onnxruntime as ort
from onnx import numpy_helper

from bench import source_commit
from lowering.importer.functions import function_ops
from lowering.importer.onnx_import import (
    CONVERTERS,
    MAX_OPSET,
    MIN_OPSET,
    OnnxImportError,
    supported_op_types,
)
from tools.testkit.e2e import compile_and_run, run_session
from tools.testkit.zoo import diagnostic_groups, output_errors

_DEFAULT = ("", "ai.onnx")
_DEVICE_TYPES = ("FLOAT", "INT64", "INT32", "BOOL")
_FUNCTION_OPS = function_ops(set(CONVERTERS), MAX_OPSET)
_NEEDS_CONSTANT = re.compile(r"\(input \d+, '(?P<name>[^']*)'\) is computed at run time; only constant values")


class CaseTimeout(Exception):
    """A case ran longer than --timeout."""


@dataclass
class Outcome:
    """What happened to one case: status is passed, failed or skipped."""

    name: str
    op: str
    status: str
    reason: str = ""
    constants: bool = False
    retargeted: int | None = None
    seconds: float = 0.0
    vs_ort: bool = False
    expanded: bool = False


@dataclass
class OpRow:
    op: str
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)


# ----------------------------------------------------------------------------------------
# Turning a test case into a model the compiler can take
# ----------------------------------------------------------------------------------------


def _elem_type(vi: onnx.ValueInfoProto) -> str | None:
    """The tensor element type name (FLOAT, INT64...), None for non-tensors."""
    if not vi.type.HasField("tensor_type"):
        return None
    return onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)


def _to_array(x) -> np.ndarray | None:
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, onnx.TensorProto):
        return numpy_helper.to_array(x)
    if isinstance(x, (np.generic, int, float, bool)):
        return np.asarray(x)
    return None


def _data(x) -> np.ndarray:
    """The tensor data of a case input/output (`_skip_reason` has checked there is some)."""
    a = _to_array(x)
    if a is None:
        raise TypeError(f"not tensor data: {type(x).__name__}")
    return a


def _skip_reason(model: onnx.ModelProto, inputs: Sequence, outputs: Sequence) -> str | None:
    """Why a case is not a float case (or draws random numbers), or None if it is one."""
    g = model.graph
    node = g.node[0]
    if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
        given = {vi.name: _to_array(x) for vi, x in zip(g.input, inputs)}
        training = given.get(node.input[2])
        ratio = given.get(node.input[1]) if len(node.input) > 1 and node.input[1] else np.asarray(0.5)
        if training is not None and bool(training) and (ratio is None or float(ratio) != 0.0):
            return "random (Dropout in training mode drops a random mask)"
    for vi in g.output:
        t = _elem_type(vi)
        if t not in _DEVICE_TYPES:
            return f"{(t or 'non-tensor').lower()} output"
    for vi in g.input:
        t = _elem_type(vi)
        if t not in _DEVICE_TYPES:
            return f"{(t or 'non-tensor').lower()} input"
    if any(_to_array(x) is None for x in (*inputs, *outputs)):
        return "input or output data that is not a tensor"
    if any(_data(x).size == 0 for x in (*inputs, *outputs)):
        return "zero-size tensor"
    return None


def _opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in _DEFAULT), 0)


def _with_constants(model: onnx.ModelProto, feeds: dict[str, np.ndarray], names: set[str]) -> onnx.ModelProto:
    """`model` with the graph inputs `names` turned into initializers of their data."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    keep = [vi for vi in g.input if vi.name not in names]
    del g.input[:]
    g.input.extend(keep)
    g.initializer.extend(numpy_helper.from_array(np.asarray(feeds[n]), n) for n in names)
    for n in names:
        feeds.pop(n)
    return out


def _ort_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return run_session(sess, [o.name for o in model.graph.output], feeds)


def _matches(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> tuple[bool, float]:
    ratio = 0.0
    for g, w in zip(got, want):
        ratio = max(ratio, output_errors(np.asarray(g), np.asarray(w))["tolerance_ratio"])
    return ratio <= 1.0, ratio


def _retarget(model: onnx.ModelProto, feeds: dict[str, np.ndarray], expected: Sequence[np.ndarray]
              ) -> tuple[onnx.ModelProto | None, int | None, str]:
    """(model to compile, the opset it was moved to or None, why it cannot be moved)."""
    v = _opset(model)
    if MIN_OPSET <= v <= MAX_OPSET:
        return model, None, ""
    target = MAX_OPSET if v > MAX_OPSET else MIN_OPSET
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for o in out.opset_import:
        if o.domain in _DEFAULT:
            o.version = target
    out.ir_version = min(out.ir_version, 10)  # IR 10 goes with opset 21
    where = f"opset {v}, outside {MIN_OPSET}..{MAX_OPSET}"
    try:
        onnx.checker.check_model(out, full_check=True)
    except Exception as e:  # noqa: BLE001 - report it, go on
        return None, None, f"{where}, and the node is not valid at opset {target} ({_first_line(str(e))[:80]})"
    try:
        ok, _ = _matches(_ort_outputs(out, dict(feeds)), expected)
    except Exception:  # noqa: BLE001 - report it, go on
        return None, None, f"{where}, and onnxruntime cannot run it at opset {target}"
    if not ok:
        return None, None, f"{where}, and onnxruntime's result at opset {target} is not the expected one"
    return out, target, ""


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _reason(e: BaseException) -> str:
    """The one-line reason of a failure: the first diagnostic line (for importer
    errors the first of each cause), else the exception's first line."""
    if isinstance(e, OnnxImportError):
        return "; ".join(line for line, _ in diagnostic_groups(str(e)))
    text = _first_line(str(e))
    if not text.startswith("error:"):
        text = f"{type(e).__name__}: {text}" if text else type(e).__name__
    return text


def run_case(case, arch: str, op: str | None = None) -> Outcome:
    """Compile, simulate and compare one node test case (an expanded one: `op` is the op
    it expands)."""
    out = _run_case(case, arch, op or case.model.graph.node[0].op_type)
    out.expanded = op is not None
    return out


def _run_case(case, arch: str, op: str) -> Outcome:
    model = case.model
    inputs, outputs = case.data_sets[0]
    skip = _skip_reason(model, inputs, outputs)
    if skip:
        return Outcome(case.name, op, "skipped", skip)
    if op != model.graph.node[0].op_type or len(model.graph.node) > 1:
        missing = _not_importable(model)
        if missing:
            return Outcome(case.name, op, "skipped", f"uses {', '.join(missing)}: not supported")
    feeds = {vi.name: _data(x) for vi, x in zip(model.graph.input, inputs)}
    expected = [_data(x) for x in outputs]
    big = {k for k, v in feeds.items() if v.dtype != np.float32 and v.size and np.abs(v.astype(np.int64)).max() >= 2 ** 24}
    if big:  # integers float32 cannot carry exactly
        model = _with_constants(model, feeds, big)
    model, retargeted, why = _retarget(model, feeds, expected)
    if model is None:
        return Outcome(case.name, op, "skipped", why)
    constants = False
    for _attempt in range(len(feeds) + 1):
        try:
            res, _ = compile_and_run(model, arch, inputs=feeds)
        except OnnxImportError as e:
            asked = {m["name"] for m in _NEEDS_CONSTANT.finditer(str(e))}
            # a value computed from an input (inside a function body): every integer input
            names = (asked & set(feeds)) or ({k for k, v in feeds.items() if v.dtype != np.float32} if asked
                                             else set())
            if names:
                model = _with_constants(model, feeds, names)
                constants = True
                continue
            return Outcome(case.name, op, "failed", _reason(e), constants, retargeted)
        except CaseTimeout:
            raise
        except Exception as e:  # noqa: BLE001 - report it, go on
            return Outcome(case.name, op, "failed", _reason(e), constants, retargeted)
        missing = [o.name for o in model.graph.output if o.name not in res.outputs]
        if missing:
            return Outcome(case.name, op, "failed", f"output(s) {', '.join(missing)} missing from the run",
                           constants, retargeted)
        got = [np.asarray(res.outputs[o.name]) for o in model.graph.output]
        bad = [f"'{o.name}' shape {list(g.shape)} != {list(w.shape)}"
               for o, g, w in zip(model.graph.output, got, expected) if g.shape != w.shape]
        if bad:
            return Outcome(case.name, op, "failed", "wrong output shape: " + ", ".join(bad), constants, retargeted)
        ok, ratio = _matches(got, expected)
        if not ok:
            if _onnxruntime_agrees(model, feeds, got, expected):
                return Outcome(case.name, op, "passed", "", constants, retargeted, vs_ort=True)
            return Outcome(case.name, op, "failed", f"mismatch: error {ratio:.3g}x the tolerance",
                           constants, retargeted)
        return Outcome(case.name, op, "passed", "", constants, retargeted)
    return Outcome(case.name, op, "failed", "the importer still asks for constants with every input constant",
                   constants, retargeted)


def _onnxruntime_agrees(model: onnx.ModelProto, feeds: dict[str, np.ndarray], got: Sequence[np.ndarray],
                        expected: Sequence[np.ndarray]) -> bool:
    """Whether onnxruntime also differs from the expected outputs, and `got` matches it."""
    try:
        ref = _ort_outputs(model, dict(feeds))
    except Exception:  # noqa: BLE001 - onnxruntime cannot run it: no second opinion
        return False
    return not _matches(ref, expected)[0] and _matches(got, ref)[0]


def _on_alarm(signum, frame):
    raise CaseTimeout()


def run_case_guarded(case, arch: str, timeout: float, expands: str | None = None) -> Outcome:
    """run_case that never raises: a crash or a timeout is a failed case."""
    t0 = time.perf_counter()
    try:
        op = expands or case.model.graph.node[0].op_type
    except Exception:  # noqa: BLE001 - report it, go on
        op = "?"
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        out = run_case(case, arch, expands)
    except CaseTimeout:
        out = Outcome(case.name, op, "failed", f"timeout: more than {timeout:.0f} s", expanded=bool(expands))
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        out = Outcome(case.name, op, "failed", f"harness error: {type(e).__name__}: {_first_line(str(e))}",
                      expanded=bool(expands))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    out.seconds = time.perf_counter() - t0
    return out


# ----------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------


def collect(ops: set[str]) -> tuple[list, list[tuple[object, str]]]:
    """The node test cases of `ops` (single-node models in the default domain) and the
    expanded function cases of every op, each with the op it expands (the op of the case
    it is the expansion of: `test_X_expanded[_verN]` of `test_X`)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            cases = collect_testcases()
    picked, expanded, op_of = [], [], {}
    for c in cases:
        if c.model is None or not c.data_sets:
            continue
        nodes = c.model.graph.node
        if "_expanded" in c.name:
            expanded.append(c)
            continue
        if len(nodes) == 1:
            op_of[c.name] = nodes[0].op_type
        if len(nodes) == 1 and nodes[0].domain in _DEFAULT and nodes[0].op_type in ops:
            picked.append(c)
    named = [(c, op_of.get(re.sub(r"_expanded(_ver\d+)?$", "", c.name), "?")) for c in expanded]
    return picked, named


def _not_importable(model: onnx.ModelProto) -> list[str]:
    """The op types of `model`'s nodes (and their subgraphs') that neither have a
    converter nor import as a function body ([] when every node can import)."""
    known = set(supported_op_types(functions_too=True)) | set(_FUNCTION_OPS)
    found: set[str] = set()

    def walk(nodes) -> None:
        for n in nodes:
            if n.domain not in _DEFAULT or n.op_type not in known:
                found.add(f"{n.domain}.{n.op_type}" if n.domain not in _DEFAULT else n.op_type)
            for a in n.attribute:
                walk([m for g in ([a.g] if a.HasField("g") else list(a.graphs)) for m in g.node])
    walk(model.graph.node)
    return sorted(found)


def _general(reason: str) -> str:
    """A reason without what is specific to one case (node name, opset, shapes and
    numbers), so the per-op column groups alike failures."""
    reason = re.sub(r"^error: node '.*?' \([^)]*\): ", "", reason)
    reason = re.sub(r"\[[^\[\]]*\]", "[...]", reason)
    reason = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?x", "Nx", reason)
    return reason


def _grouped(reasons: list[str], limit: int = 4) -> str:
    counts = Counter(_general(r) for r in reasons)
    parts = [f"{r} ({n})" if n > 1 else r for r, n in counts.most_common(limit)]
    if len(counts) > limit:
        parts.append(f"{len(counts) - limit} more reasons")
    return "; ".join(p.replace("|", "\\|") for p in parts)


def unsupported_ops() -> list[str]:
    """Default-domain ONNX ops (not deprecated) without a converter."""
    sup = set(supported_op_types())
    names = {s.name for s in onnx.defs.get_all_schemas() if s.domain in _DEFAULT and not s.deprecated}
    return sorted(names - sup)


def render(rows: dict[str, OpRow], expanded: list[Outcome], arch: str, seconds: float) -> list[str]:
    claimed = set(supported_op_types(functions_too=True))
    all_out = [o for r in rows.values() for o in r.outcomes]
    mine = [o for o in all_out if o.op in claimed]
    passed = sum(o.status == "passed" for o in mine)
    failed = sum(o.status == "failed" for o in mine)
    skipped = sum(o.status == "skipped" for o in mine)
    floats = passed + failed
    pct = 100.0 * passed / floats if floats else 0.0
    full = sum(1 for op in claimed if op in rows and rows[op].count("failed") == 0)
    candidates = sorted(op for op in rows if op not in claimed)
    lines = [
        "# ONNX node conformance",
        "",
        (f"`python bench/conformance.py --arch {arch}` at commit {source_commit()} (onnx {onnx.__version__}, "
         f"{len(claimed)} supported op types: "
         f"{len(CONVERTERS)} converted, {len(claimed) - len(CONVERTERS)} imported as their ONNX function body; "
         f"{seconds:.0f} s). Float cases compiled with `npu-default`, simulated and compared with the expected "
         "outputs (rtol 1e-3, atol 1e-4 x max |expected|); see the script's docstring for the rules."),
        "",
        (f"**Totals over the supported op types: {floats} cases of the device's element types (float32, and "
         f"int64/int32/bool carried as f32: the 'float' column), {passed} passed, {failed} failed "
         f"({pct:.1f}% pass), {full} of {len(claimed)} op types with every such case passing; {skipped} cases "
         f"skipped (other element types, zero-size, random, or outside opsets {MIN_OPSET}..{MAX_OPSET}).**"),
        "",
        _expanded_totals(expanded),
        "",
        ("Function-body candidates not counted as supported (their cases are in the table): "
         + ", ".join(f"{op} {rows[op].count('passed')}/{rows[op].count('passed') + rows[op].count('failed')}"
                     for op in candidates) + "."),
        "",
        "| op | cases | float | passed | failed | skipped | const | retargeted | vs ort | failures (reason, count) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for op in sorted(rows):
        r = rows[op]
        p, f, s = r.count("passed"), r.count("failed"), r.count("skipped")
        const = sum(o.constants and o.status == "passed" for o in r.outcomes)
        ret = sum(o.retargeted is not None and o.status == "passed" for o in r.outcomes)
        reasons = _grouped([o.reason for o in r.outcomes if o.status == "failed"])
        kind = _FUNCTION_OPS.get(op)
        shown = f"{op} ({kind})" if kind else op
        ort = sum(o.vs_ort for o in r.outcomes)
        lines.append(f"| {shown} | {len(r.outcomes)} | {p + f} | {p} | {f} | {s} | {const} | {ret} | {ort} | {reasons} |")
    lines += ["", "## Failed cases", ""]
    fails = [o for o in all_out if o.status == "failed"]
    lines += [f"- `{o.name}` ({o.op}): {o.reason}" for o in sorted(fails, key=lambda o: (o.op, o.name))] or ["none"]
    lines += ["", "## Skipped cases by reason", "", "| reason | cases | ops |", "|---|---|---|"]
    by_reason: dict[str, list[Outcome]] = defaultdict(list)
    for o in all_out:
        if o.status == "skipped":
            key = re.sub(r"opset \d+, outside", "opset N, outside", o.reason)
            if key.startswith("opset N"):
                key = re.sub(r" \(.*\)$", "", key)
            by_reason[key].append(o)
    for reason, outs in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        ops = sorted({o.op for o in outs})
        lines.append(f"| {reason.replace('|', '/')} | {len(outs)} | {', '.join(ops)} |")
    lines += _expanded_section(expanded)
    lines += ["", "## ONNX ops without a converter", "", ", ".join(unsupported_ops()), ""]
    return lines


def _expanded_totals(expanded: list[Outcome]) -> str:
    importable = [o for o in expanded if not o.reason.startswith("uses ")]
    p, f = (sum(o.status == s for o in importable) for s in ("passed", "failed"))
    return (f"**Expanded function cases (`*_expanded*`, the op written as its ONNX function body; not in the "
            f"totals above): {len(expanded)} cases, {len(importable)} whose nodes all import: {p + f} of the "
            f"device's element types, {p} passed, {f} failed ({100.0 * p / (p + f) if p + f else 0.0:.1f}% pass), "
            f"{len(importable) - p - f} skipped; {len(expanded) - len(importable)} use an op that does not "
            "import.**")


def _expanded_section(expanded: list[Outcome]) -> list[str]:
    """The expanded cases by the op they expand, their failures and the ops that keep the
    others from importing."""
    lines = ["", "## Expanded function cases", "", _expanded_totals(expanded), "",
             "| op expanded | cases | nodes import | float | passed | failed | skipped | const | vs ort | "
             "failures (reason, count) |", "|---|---|---|---|---|---|---|---|---|---|"]
    by_op: dict[str, list[Outcome]] = defaultdict(list)
    for o in expanded:
        by_op[o.op].append(o)
    for op, outs in sorted(by_op.items()):
        ok = [o for o in outs if not o.reason.startswith("uses ")]
        p, f = (sum(o.status == s for o in ok) for s in ("passed", "failed"))
        const = sum(o.constants and o.status == "passed" for o in ok)
        lines.append(f"| {op} | {len(outs)} | {len(ok)} | {p + f} | {p} | {f} | {len(ok) - p - f} | {const} | "
                     f"{sum(o.vs_ort for o in ok)} | {_grouped([o.reason for o in ok if o.status == 'failed'])} |")
    lines += ["", "Failed expanded cases:", ""]
    fails = sorted((o for o in expanded if o.status == "failed"), key=lambda o: o.name)
    lines += [f"- `{o.name}` ({o.op}): {o.reason}" for o in fails] or ["none"]
    missing = Counter(op for o in expanded if o.reason.startswith("uses ")
                      for op in o.reason.removeprefix("uses ").removesuffix(": not supported").split(", "))
    lines += ["", "Ops that keep expanded cases from importing (cases): "
              + (", ".join(f"{op} ({n})" for op, n in missing.most_common()) or "none") + "."]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--arch", default="default")
    ap.add_argument("--ops", default=None, help="comma-separated op types (default: every supported one)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case before it counts as failed")
    ap.add_argument("--out", default=None, help="write the markdown table here")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = ap.parse_args()
    supported = set(supported_op_types()) | set(_FUNCTION_OPS)  # (every function op: candidates too)
    ops = supported
    if args.ops:
        ops = {o.strip() for o in args.ops.split(",") if o.strip()}
        unknown = sorted(ops - supported)
        if unknown:
            ap.error(f"not supported by the importer: {', '.join(unknown)}")
    ort.set_default_logger_severity(4)
    t0 = time.perf_counter()
    cases, named = collect(ops)
    if args.ops:
        named = [(c, op) for c, op in named if op in ops]
    rows = {op: OpRow(op) for op in ops}
    expanded: list[Outcome] = []
    todo = [(c, None) for c in cases] + named
    for i, (case, expands) in enumerate(todo, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = run_case_guarded(case, args.arch, args.timeout, expands)
        if out.expanded:
            expanded.append(out)
        else:
            rows.setdefault(out.op, OpRow(out.op)).outcomes.append(out)
        if args.verbose or out.status == "failed":
            print(f"[{i}/{len(todo)}] {out.status:7s} {out.name} ({out.seconds:.1f} s) {out.reason}", flush=True)
    seconds = time.perf_counter() - t0
    lines = render(rows, expanded, args.arch, seconds)
    print(lines[4].strip("*"))  # (the totals lines)
    print(lines[6].strip("*"))
    worst = sorted(rows.values(), key=lambda r: -r.count("failed"))
    print("most failures: " + ", ".join(f"{r.op} {r.count('failed')}" for r in worst[:8] if r.count("failed")))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
