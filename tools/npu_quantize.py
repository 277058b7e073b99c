"""`npu-quantize MODEL.onnx --data CALIB -o MODEL.q.onnx [--method M]`: post-training
quantization (`tools.quantize`). CALIB is a directory of input `.npz` files (one
sample each, as `npu-run --inputs` takes them) or one `.npz` whose arrays stack the
samples on a new leading axis. The output is a standard QDQ ONNX model (uint8
activations with zero points, or int8 symmetric with `--symmetric`; int8 weights per
channel unless `--per-tensor`; int32 biases) that onnxruntime runs and `npu-compile`
compiles. Calibration (the slow step) prints its progress on stderr; its statistics
are cached (`--cache-dir`, as npu-compile's; `--no-cache`), so another `--method`
re-runs no inference. Exit 1 with one line naming the file and the input for bad
calibration data; 2 for bad options.
"""

from __future__ import annotations

import argparse
import sys

from tools.cli import EXIT_OK, UsageError, UserError, cli_main, console, write_output


def build_parser() -> argparse.ArgumentParser:
    from tools.quantize.calibrate import METHODS
    p = argparse.ArgumentParser(prog="npu-quantize", description=(__doc__ or "").split("\n\n")[0].split(": ", 1)[-1])
    p.add_argument("model", metavar="MODEL.onnx", help="the float model")
    p.add_argument("--data", required=True, metavar="CALIB",
                   help="calibration samples: a directory of .npz files or one stacked .npz")
    p.add_argument("-o", "--output", metavar="OUT.onnx",
                   help="the QDQ model to write (default: MODEL-STEM.q.onnx in the current directory)")
    p.add_argument("--method", default="minmax", choices=METHODS,
                   help="how a tensor's range is chosen from its statistics (default: minmax)")
    p.add_argument("--percentile", type=float, default=99.999,
                   help="the percentile of |x| the 'percentile' method keeps (default: 99.999)")
    p.add_argument("--symmetric", action="store_true", help="int8 symmetric activations (default: uint8 "
                   "with a zero point)")
    p.add_argument("--per-tensor", action="store_true", help="one scale per weight tensor (default: per "
                   "output channel)")
    p.add_argument("--qtable", metavar="FILE", help="precision table: lines 'PATTERN int8|bf16|f16|f32' (a node "
                   "name or shell pattern; bf16/f16/f32 keep the layer out of int8, computed in that type by "
                   "npu-compile; the last matching line wins)")
    p.add_argument("--sensitivity", metavar="OUT.md", help="quantize each layer alone and write the table of "
                   "the outputs' cosine and relative error against the float model, worst first")
    p.add_argument("--target", metavar="cosine=X|accuracy=X", help="keep the most sensitive layers out of int8 "
                   "(in --keep-precision) until the outputs' cosine against the float model (over the calibration "
                   "samples) reaches X, or the top-1 accuracy of the first output on the samples' 'labels' array does")
    p.add_argument("--keep-precision", default="bf16", choices=("bf16", "f16", "f32"),
                   help="the type --target keeps layers in (default: bf16)")
    p.add_argument("--cycles", metavar="ARCH", nargs="?", const="default", help="also compile the float model (in "
                   "f32 and all bf16), the all-int8 and the written (mixed) models for ARCH (default: default) and "
                   "print their simulated cycles")
    p.add_argument("--cache-dir", metavar="DIR", help="where calibration statistics are cached (default: "
                   "npu-compile's cache directory)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write cached statistics")
    return p


def _progress(msg: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{msg}", end="", file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    import os

    import onnx

    from tools.compile_cache import cache_dir
    from tools.quantize import EVAL_SAMPLES, CalibrationError, quantize
    if not 0 < args.percentile <= 100:
        raise UsageError(f"--percentile {args.percentile:g} is not in (0, 100]")
    kind, target = _target(args.target)
    try:
        model = onnx.load(args.model)
    except FileNotFoundError:
        raise UserError(f"{args.model}: no such file") from None
    except Exception as e:  # onnx raises DecodeError and others for a bad file
        raise UserError(f"{args.model}: not an ONNX model ({type(e).__name__})") from None
    cache = cache_dir(args.cache_dir, args.no_cache)
    try:
        q, rep = quantize(model, args.data, method=args.method, percentile=args.percentile,
                          per_channel=not args.per_tensor, symmetric=args.symmetric,
                          cache_dir=str(cache) if cache is not None else None, progress=_progress,
                          qtable=args.qtable, target_cosine=target if kind == "cosine" else None,
                          target_accuracy=target if kind == "accuracy" else None,
                          sensitivity=bool(args.sensitivity), keep_precision=args.keep_precision)
    except CalibrationError as e:
        raise UserError(str(e)) from None
    finally:
        if sys.stderr.isatty():
            print(file=sys.stderr)
    out = args.output or os.path.splitext(os.path.basename(args.model))[0] + ".q.onnx"
    write_output(out, q.SerializeToString())
    pairs = sum(1 for n in q.graph.node if n.op_type == "QuantizeLinear")
    print(f"wrote {out}: {pairs} activation tensors quantized ({args.method}, "
          f"{'int8 symmetric' if args.symmetric else 'uint8 asymmetric'}), weights int8 "
          f"{'per tensor' if args.per_tensor else 'per channel'}; {rep.samples} calibration samples"
          f"{' (statistics from the cache)' if rep.cache_hit else ''}")
    for prec in ("bf16", "f16", "f32"):
        kept = [n for n in rep.float_layers if rep.precisions.get(n) == prec]
        if kept:
            print(f"kept in {prec} ({len(kept)}): {', '.join(kept)}")
    if rep.search:
        print(f"target search ({kind}): " + ", ".join(f"{k} kept in {args.keep_precision} {c:.6f}" if k else
                                                      f"all quantized {c:.6f}" for k, c in rep.search))
    if rep.cosine is not None:
        print(f"outputs' cosine against the float model: {rep.cosine:.6f} over {min(rep.samples, EVAL_SAMPLES)} "
              "calibration samples" + (f" (target {target:g}{'' if rep.cosine >= target else ': NOT reached'})"
                                       if kind == "cosine" and target is not None else ""))
    if rep.accuracy is not None and target is not None:
        print(f"top-1 accuracy on the {rep.samples} labelled samples: {rep.accuracy:.4f} (float "
              f"{rep.float_accuracy:.4f}; target {target:g}{'' if rep.accuracy >= target else ': NOT reached'})")
    if args.sensitivity:
        from tools.quantize.mixed import format_sensitivity
        others = "\n" + format_sensitivity(rep.op_sensitivity, "other op") if rep.op_sensitivity else ""
        write_output(args.sensitivity, format_sensitivity(rep.sensitivity) + others)
        print(f"wrote {args.sensitivity}: {len(rep.sensitivity)} layers"
              + (f", {len(rep.op_sensitivity)} other ops (the target search measured them)" if others else ""))
    if args.cycles:
        _print_cycles(args.cycles, model, q, rep)
    return EXIT_OK


def _target(text: str | None) -> tuple[str, float | None]:
    """(cosine | accuracy, X) of `--target`."""
    if text is None:
        return "cosine", None
    key, _, value = text.partition("=")
    try:
        x = float(value)
    except ValueError:
        x = float("nan")
    key = key.strip()
    if key == "cosine" and -1 <= x <= 1 or key == "accuracy" and 0 <= x <= 1:
        return key, x
    raise UsageError(f"--target '{text}': expected cosine=X with X in [-1, 1] (e.g. cosine=0.99) or accuracy=X "
                     "with X in [0, 1] (e.g. accuracy=0.9)")


def _print_cycles(arch_spec: str, model, q, rep) -> None:
    """Simulated cycles (timing only) of the float (f32 and all bf16), all-int8 and written models."""
    from tools.quantize.mixed import simulated_cycles
    models = {"float f32": (model, {}), "all bf16": (model, {"precision": "bf16"})}
    if rep.all_int8 is not None:
        models["all int8"] = (rep.all_int8, {})
    models["written" if rep.all_int8 is None else "mixed (written)"] = (q, {})
    for name, (m, options) in models.items():
        try:
            cycles = simulated_cycles(m, arch_spec, **options)
        except (UserError, UsageError) as e:
            print(f"cycles ({arch_spec}): {name}: does not compile: {e}")
            continue
        print(f"cycles ({arch_spec}): {name} {cycles:,}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of `npu-quantize`; returns the exit code."""
    return cli_main(build_parser, _run, argv)


console_main = console(main)
"""The `npu-quantize` console script (`tools.cli.console`)."""

if __name__ == "__main__":
    console_main()
