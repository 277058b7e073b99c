"""Compile time, whole processes: cold against IREE's `iree-compile`, and cold against
warm through the compile cache.

    python bench/compile.py [--repeat N] [--models a,b] [--out bench/results/compile.md]

Models: light CNNs of the onnx wheel with seeded random weights (`tools/testkit/zoo.py:prepare`,
seed 0; seed 1 is the weights-only change), written to `.onnx` files first.

Columns, each the median of --repeat whole processes (`python -m tools.npu_compile`):
- cold s: `npu-compile MODEL --no-cache` (import, `npu-default`, packaging, writing);
- iree import s, iree compile s: `iree-import-onnx` on the model converted to opset 17
  (IREE's importer needs it; the conversion is not timed) and `iree-compile
  --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=host`; cold / iree: our
  cold compile over IREE's import + compile (target <= 0.35), runs interleaved;
- stored s: a cold compile into an empty cache (all three levels written);
- warm s: the same compile again (a hit: the executable copied out; target <= 0.3 s
  on ResNet-50); weights s: the seed-1 model into a cache holding seed 0's entries,
  with what each level did; same: the warm and weights-only executables are
  byte-identical to `--no-cache` compiles of the same models.
Without `iree-compile` on PATH (`pip install iree-base-compiler`) its columns say so.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import onnx

from bench import write_table
from tools.testkit.zoo import light_models, prepare

MODELS = ("resnet50", "squeezenet", "inception_v1", "densenet121")
IREE_TARGET, WARM_TARGET = 0.35, 0.3


def _run(cmd: list[str]) -> tuple[float, str]:
    """Seconds of one whole process; raises RuntimeError with its last stderr line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("NPU_NO_CACHE", None)
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError((p.stderr.strip().splitlines() or ["failed"])[-1])
    return seconds, p.stdout


def npu_compile(model: Path, out: Path, *extra: str) -> tuple[float, str]:
    return _run([sys.executable, "-m", "tools.npu_compile", str(model), "-o", str(out), *extra])


def _cache_outcome(stdout: str) -> str:
    line = next((ln for ln in stdout.splitlines() if ln.startswith("cache:")), "cache: ?")
    return line.split(":", 1)[1].split(" (")[0].strip()


def _write_models(name: str, tmp: Path) -> tuple[Path, Path, Path]:
    """seed 0, seed 1 (weights only) and seed 0 at opset 17 for IREE; all dated a
    minute back (as a model file is when it is compiled: remembered by stat)."""
    from onnx import shape_inference, version_converter
    paths = []
    for seed in (0, 1):
        model, _ = prepare(light_models()[name], seed)
        paths.append(tmp / f"{name}_s{seed}.onnx")
        onnx.save(model, str(paths[-1]))
    model, _ = prepare(light_models()[name], 0)
    paths.append(tmp / f"{name}_opset17.onnx")
    onnx.save(shape_inference.infer_shapes(version_converter.convert_version(model, 17)), str(paths[-1]))
    old = time.time() - 60
    for p in paths:
        os.utime(p, (old, old))
    return paths[0], paths[1], paths[2]


def _iree(model17: Path, tmp: Path) -> tuple[float, float]:
    mlir, vmfb = tmp / "iree.mlir", tmp / "iree.vmfb"
    imp, _ = _run(["iree-import-onnx", str(model17), "-o", str(mlir)])
    comp, _ = _run(["iree-compile", "--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host",
                    str(mlir), "-o", str(vmfb)])
    return imp, comp


def bench_model(name: str, repeat: int, tmp: Path, iree: bool) -> dict:
    s0, s1, s17 = _write_models(name, tmp)
    row: dict = {"model": name, "weights_mb": s0.stat().st_size / 2**20}
    cold, imp, comp = [], [], []
    for _ in range(repeat):  # interleaved, so both see the same machine
        cold.append(npu_compile(s0, tmp / "cold.npuexe", "--no-cache")[0])
        if iree:
            i, c = _iree(s17, tmp)
            imp.append(i)
            comp.append(c)
    npu_compile(s1, tmp / "cold1.npuexe", "--no-cache")
    stored, warm, weights, outcome = [], [], [], ""
    for r in range(repeat):
        cache = tmp / f"cache{r}"
        stored.append(npu_compile(s0, tmp / "stored.npuexe", "--cache-dir", str(cache))[0])
        for _ in range(2 if r else 1):
            warm.append(npu_compile(s0, tmp / "warm.npuexe", "--cache-dir", str(cache))[0])
        seconds, out = npu_compile(s1, tmp / "weights.npuexe", "--cache-dir", str(cache))
        weights.append(seconds)
        outcome = _cache_outcome(out)
        shutil.rmtree(cache)
    same = ((tmp / "warm.npuexe").read_bytes() == (tmp / "cold.npuexe").read_bytes()
            and (tmp / "weights.npuexe").read_bytes() == (tmp / "cold1.npuexe").read_bytes())
    med = statistics.median
    row.update(cold=med(cold), stored=med(stored), warm=med(warm), weights=med(weights), outcome=outcome,
               same=same, iree_import=med(imp) if imp else None, iree_compile=med(comp) if comp else None)
    return row


def table(rows: list[dict], repeat: int, iree: bool) -> str:
    load = os.getloadavg()[0]
    lines = [f"# Compile time, whole processes (median of {repeat}; load average {load:.1f} at the start)", "",
             "Cold against IREE (`iree-compile`, llvm-cpu, host CPU; target cold / iree <= "
             f"{IREE_TARGET}):", "",
             "| model | model MB | cold s | iree import s | iree compile s | cold / iree |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | | error: {r['error']} | | | |")
        elif r["iree_compile"] is None:
            lines.append(f"| {r['model']} | {r['weights_mb']:.1f} | {r['cold']:.2f} | "
                         f"{'(no iree-compile on PATH)' if not iree else 'failed'} | | |")
        else:
            total = r["iree_import"] + r["iree_compile"]
            lines.append(f"| {r['model']} | {r['weights_mb']:.1f} | {r['cold']:.2f} | {r['iree_import']:.2f} | "
                         f"{r['iree_compile']:.2f} | {r['cold'] / total:.2f} |")
    lines += ["", f"Cold against warm through the compile cache (target warm <= {WARM_TARGET} s on ResNet-50):", "",
              "| model | cold s | stored s | warm s | weights-only s | weights-only: what each level did | "
              "same bytes |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" not in r:
            lines.append(f"| {r['model']} | {r['cold']:.2f} | {r['stored']:.2f} | {r['warm']:.2f} | "
                         f"{r['weights']:.2f} | {r['outcome']} | {'yes' if r['same'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--out", help="also write the table to this file")
    args = p.parse_args(argv)
    iree = shutil.which("iree-compile") is not None and shutil.which("iree-import-onnx") is not None
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
