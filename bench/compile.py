"""Compile time, whole processes: cold against IREE's `iree-compile`, cold against warm
through the compile cache, and recompiles after a one-layer change.

    python bench/compile.py [--repeat N] [--models a,b] [--out bench/results/compile.md]

Models: the four CNNs of the onnx wheel with seeded random weights
(`tools/testkit/zoo.py:prepare`, seed 0) and a 12-layer BERT-base encoder at 128
tokens (`tools/testkit/transformers.py:bert_layers`), written to `.onnx` files first.

Columns, each the median of --repeat whole processes (`python -m tools.npu_compile`),
npu-compile and IREE interleaved so both see the same machine:
- cold s, peak MB: `npu-compile MODEL --no-cache` (load, import, `npu-default`,
  packaging, writing) and its peak resident memory (children's ru_maxrss);
- iree import s, iree compile s: `iree-import-onnx` (on the model at opset 17, the
  conversion not timed) and `iree-compile --iree-hal-target-backends=llvm-cpu
  --iree-llvmcpu-target-cpu=host`; cold / iree: ours over IREE's import + compile;
- stored s: a cold compile into an empty cache; warm s: the same again (a hit);
- one layer's weights s: the model with one layer's weights scaled (the middle conv's,
  BERT's layer 5) into the cache holding the original, with what each level did;
  one layer's structure s (BERT: layer 11's FFN 2048 wide instead of 3072), likewise;
  each also as a fraction of cold; same: every cached compile's executable is
  byte-identical to a `--no-cache` compile of the same model.
IREE's scripts are run from this interpreter's bin directory when they are there (no
version-manager shim in front: npu-compile runs as `python -m` too), else from PATH;
without `iree-compile` (`pip install iree-base-compiler[onnx]`) its columns say so.
The compiler's packages are byte-compiled first (`compileall`), as `pip install` leaves
an installed package and IREE's Python importer: an editable checkout run with
PYTHONDONTWRITEBYTECODE set compiles every module from source at each start (~0.3-0.4 s
a process on these machines).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np
import onnx

from bench import run_checked, write_table
from tools.testkit.zoo import light_models, prepare

MODELS = ("resnet50", "squeezenet", "inception_v1", "densenet121", "bert12")
IREE_TARGET, WARM_TARGET, WEIGHTS_TARGET, STRUCTURE_TARGET = 0.3, 0.25, 0.25, 0.35


def _run(cmd: list[str]) -> tuple[float, str, float]:
    """Seconds, stdout and peak resident MB of one whole process (`bench.run_checked`)."""
    p, seconds, _, peak = run_checked(cmd, ROOT)
    return seconds, p.stdout, peak


def npu_compile(model: Path, out: Path, *extra: str) -> tuple[float, str, float]:
    return _run([sys.executable, "-m", "tools.npu_compile", str(model), "-o", str(out), *extra])


def _cache_outcome(stdout: str) -> str:
    line = next((ln for ln in stdout.splitlines() if ln.startswith("cache:")), "cache: ?")
    return line.split(":", 1)[1].split(" (")[0].strip()


def _scaled(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """A copy of `model` with the named float initializers of more than 16 elements
    scaled by 1.01 (a retrained layer)."""
    from onnx import numpy_helper
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for init in out.graph.initializer:
        a = numpy_helper.to_array(init) if init.name in names else None
        if a is not None and a.dtype == np.float32 and a.size > 16:  # (weights: not shapes or scalars)
            init.CopyFrom(numpy_helper.from_array(a * np.float32(1.01), init.name))
    return out


def _variants(name: str) -> tuple[onnx.ModelProto, onnx.ModelProto, onnx.ModelProto | None]:
    """The model, it with one layer's weights changed, it with one layer's structure
    changed (None for the CNNs)."""
    if name == "bert12":
        from tools.testkit.transformers import bert_layers
        model = bert_layers(layers=12, seq=128)
        layer = [i.name for i in model.graph.initializer if i.name.startswith("/layer.5/")]
        return model, _scaled(model, layer), bert_layers(layers=12, seq=128, ffn_of={11: 2048})
    model, _ = prepare(light_models()[name], 0)
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    middle = convs[len(convs) // 2]
    return model, _scaled(model, [i for i in middle.input[1:] if i]), None


def _write_models(name: str, tmp: Path) -> dict[str, Path]:
    """The variants as files, and the model at opset 17 for IREE; all dated a minute
    back (as a model file is when it is compiled: remembered by stat)."""
    from onnx import shape_inference, version_converter
    model, weights, structure = _variants(name)
    paths = {}
    for key, m in (("model", model), ("weights", weights), ("structure", structure)):
        if m is not None:
            paths[key] = tmp / f"{name}_{key}.onnx"
            onnx.save(m, str(paths[key]))
    paths["opset17"] = tmp / f"{name}_opset17.onnx"
    if model.opset_import[0].version != 17:
        model = version_converter.convert_version(model, 17)
    onnx.save(shape_inference.infer_shapes(model), str(paths["opset17"]))
    old = time.time() - 60
    for p in paths.values():
        os.utime(p, (old, old))
    return paths


def tool(name: str) -> str | None:
    """IREE's console script `name` beside this interpreter (as npu-compile runs: no
    version-manager shim in front, e.g. pyenv's ~0.1 s bash wrapper), else on PATH."""
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else shutil.which(name)


def _iree(model17: Path, tmp: Path) -> tuple[float, float]:
    mlir, vmfb = tmp / "iree.mlir", tmp / "iree.vmfb"
    imp = _run([tool("iree-import-onnx") or "iree-import-onnx", str(model17), "-o", str(mlir)])[0]
    comp = _run([tool("iree-compile") or "iree-compile", "--iree-hal-target-backends=llvm-cpu",
                 "--iree-llvmcpu-target-cpu=host", str(mlir), "-o", str(vmfb)])[0]
    return imp, comp


def bench_model(name: str, repeat: int, tmp: Path, iree: bool) -> dict:
    paths = _write_models(name, tmp)
    row: dict = {"model": name, "weights_mb": paths["model"].stat().st_size / 2**20}
    cold, peak, imp, comp = [], [], [], []
    for _ in range(repeat):  # interleaved, so both see the same machine
        seconds, _, mb = npu_compile(paths["model"], tmp / "cold.npuexe", "--no-cache")
        cold.append(seconds)
        peak.append(mb)
        if iree:
            i, c = _iree(paths["opset17"], tmp)
            imp.append(i)
            comp.append(c)
    changed = [k for k in ("weights", "structure") if k in paths]
    for k in changed:
        npu_compile(paths[k], tmp / f"cold_{k}.npuexe", "--no-cache")
    stored, warm = [], []
    after: dict[str, list[float]] = {k: [] for k in changed}
    outcome: dict[str, str] = {}
    for r in range(repeat):
        for k in [None, *changed]:
            cache = tmp / "cache"
            stored.append(npu_compile(paths["model"], tmp / "stored.npuexe", "--cache-dir", str(cache))[0])
            if k is None:
                warm.append(npu_compile(paths["model"], tmp / "warm.npuexe", "--cache-dir", str(cache))[0])
            else:
                seconds, out, _ = npu_compile(paths[k], tmp / f"{k}.npuexe", "--cache-dir", str(cache))
                after[k].append(seconds)
                outcome[k] = _cache_outcome(out)
            shutil.rmtree(cache)
    same = (tmp / "warm.npuexe").read_bytes() == (tmp / "cold.npuexe").read_bytes() and all(
        (tmp / f"{k}.npuexe").read_bytes() == (tmp / f"cold_{k}.npuexe").read_bytes() for k in changed)
    med = statistics.median
    row.update(cold=med(cold), peak=max(peak), stored=med(stored), warm=med(warm), outcome=outcome, same=same,
               iree_import=med(imp) if imp else None, iree_compile=med(comp) if comp else None,
               **{k: med(v) for k, v in after.items()})
    return row


def table(rows: list[dict], repeat: int, iree: bool) -> str:
    load = os.getloadavg()[0]
    lines = [f"# Compile time, whole processes (median of {repeat}; load average {load:.1f} at the end)", "",
             f"Cold against IREE (`iree-compile`, llvm-cpu, host CPU; target cold / iree <= {IREE_TARGET}; "
             "peak: the largest of the cold runs' resident memory):", "",
             "| model | model MB | cold s | peak MB | peak / model | iree import s | iree compile s | cold / iree |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | | error: {r['error']} | | | | | |")
            continue
        head = (f"| {r['model']} | {r['weights_mb']:.1f} | {r['cold']:.2f} | {r['peak']:.0f} | "
                f"{r['peak'] / r['weights_mb']:.1f} |")
        if r["iree_compile"] is None:
            lines.append(f"{head} {'(no iree-compile on PATH)' if not iree else 'failed'} | | |")
        else:
            total = r["iree_import"] + r["iree_compile"]
            lines.append(f"{head} {r['iree_import']:.2f} | {r['iree_compile']:.2f} | {r['cold'] / total:.2f} |")
    lines += ["", f"Through the compile cache (targets: warm <= {WARM_TARGET} s on ResNet-50; one layer's weights "
              f"<= {WEIGHTS_TARGET} of cold, one layer's structure <= {STRUCTURE_TARGET}):", "",
              "| model | cold s | stored s | warm s | one layer's weights s (of cold) | what each level did | "
              "one layer's structure s (of cold) | what each level did | same bytes |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            continue
        cells = []
        for k in ("weights", "structure"):
            cells += ([f"{r[k]:.2f} ({r[k] / r['cold']:.2f})", r["outcome"][k]] if k in r else ["", ""])
        lines.append(f"| {r['model']} | {r['cold']:.2f} | {r['stored']:.2f} | {r['warm']:.2f} | "
                     f"{' | '.join(cells)} | {'yes' if r['same'] else 'NO'} |")
    return "\n".join(lines) + "\n"


PACKAGES = ("npu_dialects", "lowering", "runtime", "sim", "tools")
"""What `npu-compile` imports of this checkout (`byte_compile`)."""


def byte_compile() -> None:
    """The checkout's packages compiled to bytecode (`__pycache__`, as an installed package
    has them), so no timed process compiles them from source."""
    import compileall
    for pkg in PACKAGES:
        compileall.compile_dir(str(ROOT / pkg), quiet=1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--out", help="also write the table to this file")
    args = p.parse_args(argv)
    byte_compile()
    iree = tool("iree-compile") is not None and tool("iree-import-onnx") is not None
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name in args.models.split(","):
            try:
                rows.append(bench_model(name, args.repeat, Path(d), iree))
            except RuntimeError as e:
                rows.append({"model": name, "error": str(e)})
            print(rows[-1], file=sys.stderr, flush=True)
    text = table(rows, args.repeat, iree)
    print(text)
    write_table(text.rstrip("\n").split("\n"), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
