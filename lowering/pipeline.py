"""`npu-default`: the whole compilation pipeline, and `compile_module`, the
entry point tools use.

Order (DESIGN.md): npu-canonicalize -> npu-constant-fold -> npu-shape-inference
-> npu-bn-fold -> npu-dce -> npu-cse -> npu-fold-attention-scale -> npu-merge-projections -> npu-split-concat-conv (graph optimisation) -> npu-fuse -> npu-tile
-> npu-layer-group -> npu-tile-loops -> npu-bufferize -> npu-schedule -> npu-task-canonicalize (peepholes
inside each task, once npu-schedule has fixed its range) -> npu-dma-order -> npu-events -> npu-memplan. The IR is verified once
at the end (with verify-each=true after every pass, a failure naming the pass); under an
instrumentation (`lowering/instrument.py`: npu-opt) each nested pass is timed, dumped and counted."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from lowering import get_all_passes
from lowering.errors import CompileError
from lowering.graph.fuse import DISABLED_ATTR, check_rules
from lowering.graph.input_ranges import record_input_ranges
from lowering.instrument import InstrumentOptions, run_nested, run_pipeline, verify_after
from npu_dialects import make_context
from npu_dialects.arch import Arch, set_arch
from npu_dialects.weights import attach_weights

DEFAULT_PIPELINE: tuple[str, ...] = (
    "npu-fuse-qdq", "npu-canonicalize", "npu-constant-fold", "npu-shape-inference", "npu-bn-fold", "npu-hoist-pool", "npu-dce", "npu-cse",
    "npu-fold-attention-scale", "npu-merge-projections", "npu-split-concat-conv", "npu-fuse", "npu-split-rows", "npu-tile", "npu-layer-group", "npu-tile-loops", "npu-bufferize", "npu-schedule",
    "npu-task-canonicalize", "npu-dma-order", "npu-events", "npu-prefetch", "npu-early-load", "npu-software-pipeline", "npu-unit-sync",
    "npu-memplan")
CONVERT_PRECISION = "npu-convert-precision"
"""Run with `precision=f16|bf16` after the graph optimisations, before npu-fuse."""
GRAPH_PASSES: tuple[str, ...] = (*DEFAULT_PIPELINE[:DEFAULT_PIPELINE.index("npu-fuse")], CONVERT_PRECISION)
"""Graph optimisation: the stage whose result the compile cache keeps (level 2)."""
PRECISIONS = ("f32", "f16", "bf16")
STAGES = ("all", "graph", "backend")


def run_pass(p: ModulePass, ctx: Context, module: ModuleOp, verify: bool = True) -> None:
    """Apply one pass and (by default) verify the result, naming the pass on failure."""
    p.apply(ctx, module)
    if verify:
        verify_after(p.name, module)


@dataclass(frozen=True)
class NpuDefault(ModulePass):
    """Run the default pipeline (ONNX-imported graph -> scheduled, planned tasks).

    Options: `disable=npu-fuse,...` skips passes by name (for bisection; the
    passes from npu-tile on are needed to reach executable tasks);
    `fuse-disable=rule,...` switches fusion rules off; `double-buffer=false`
    makes npu-tile never double buffer; `line-buffers=auto|always|never` and
    `group-max-kernels=N` (its `max-kernels`: the fusion depth a sweep varies) and
    `batch-split=false` go to npu-layer-group; `precision=f16|bf16` computes the model in
    that type (npu-convert-precision after the graph passes; default f32); `verify-each=true` verifies the IR after every pass, naming
    the pass that broke it (by default only the final IR is verified: verifying
    after each pass is a quarter of ResNet-50's compile time)."""

    name = "npu-default"
    disable: tuple[str, ...] = field(default=())
    fuse_disable: tuple[str, ...] = field(default=())
    double_buffer: bool = True
    line_buffers: str = "auto"
    group_max_kernels: int = 128
    batch_split: bool = True
    precision: str = "f32"
    verify_each: bool = False

    def pass_options(self) -> dict[str, dict[str, object]]:
        """Pass name -> the options this pipeline's own options set on it."""
        return {"npu-fuse": {"disable": self.fuse_disable},
                "npu-bn-fold": {"conv": "conv-bn" not in self.fuse_disable},
                "npu-tile": {"double_buffer": self.double_buffer},
                "npu-layer-group": {"line_buffers": self.line_buffers, "max_kernels": self.group_max_kernels,
                                    "batch_split": self.batch_split}}

    def passes(self) -> list[ModulePass]:
        """The nested passes this pipeline runs, in order, with their options."""
        unknown = [n for n in self.disable if n not in DEFAULT_PIPELINE]
        if unknown:
            raise CompileError(self.name, f"cannot disable unknown pass(es) {', '.join(unknown)} "
                                          f"(pipeline: {', '.join(DEFAULT_PIPELINE)})")
        check_rules(self.fuse_disable, self.name)
        if self.precision not in PRECISIONS:
            raise CompileError(self.name, f"precision must be one of {', '.join(PRECISIONS)}, got '{self.precision}'")
        registry = get_all_passes()
        options = self.pass_options()
        names = [name for name in DEFAULT_PIPELINE if name not in self.disable]
        if self.precision != "f32":  # (after the last graph pass that runs)
            at = sum(1 for name in names if name in GRAPH_PASSES)
            names.insert(at, CONVERT_PRECISION)
            options[CONVERT_PRECISION] = {"type": self.precision}
        return [registry[name]()(**options.get(name, {})) for name in names]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.apply_stage(ctx, op, "all")

    def apply_stage(self, ctx: Context, op: ModuleOp, stage: str) -> None:
        """Run the passes of `stage`: `all`, `graph` (GRAPH_PASSES) or `backend` (the rest)."""
        passes = self.passes()
        if stage != "all":
            passes = [p for p in passes if (p.name in GRAPH_PASSES) == (stage == "graph")]
        if stage != "backend":  # (the ranges random integer inputs may take: from the graph as imported)
            record_input_ranges(op)
        if self.fuse_disable:  # (npu-fuse records it too, but it may itself be disabled)
            op.attributes[DISABLED_ATTR] = ArrayAttr([StringAttr(r) for r in self.fuse_disable])
        run_nested(self.name, passes, ctx, op, self.verify_each)


def compile_module(module: ModuleOp, arch: Arch | None = None, weights: dict | None = None,
                   instrument: InstrumentOptions | None = None, stage: str = "all", **options) -> ModuleOp:
    """Compile a graph-level module in place through `npu-default` and return it.
    `weights` are the module's weights (passes may add folded ones: read the final
    set with `npu_dialects.weights.weights_of(module)`); `instrument` observes the
    compile (`lowering/instrument.py`: pass times, IR dumps, pattern statistics,
    reported to stderr); `options` go to NpuDefault (e.g. `verify_each=True`).
    `stage` runs only the graph optimisation (`graph`) or the rest (`backend`), as the
    compile cache does (not with `instrument`).
    Raises CompileError (a DiagnosticException) for anything the user must fix."""
    assert stage in STAGES and (stage == "all" or instrument is None), stage
    if arch is not None:
        set_arch(module, arch)
    if weights is not None:
        attach_weights(module, weights)
    try:
        if instrument is None:
            NpuDefault(**options).apply_stage(make_context(), module, stage)
        else:
            run_pipeline([NpuDefault(**options)], make_context(), module, instrument, verify_input=False)
    except VerifyException as e:  # an op a pass built does not verify (a CompileError passes through)
        raise CompileError("npu-default", str(e)) from e
    return module
