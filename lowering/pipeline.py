"""`npu-default`: the whole compilation pipeline, and `compile_module`, the
entry point tools use.

Order (DESIGN.md): npu-canonicalize -> npu-constant-fold -> npu-shape-inference
-> npu-bn-fold -> npu-dce -> npu-cse (graph optimisation) -> npu-fuse -> npu-tile
-> npu-layer-group -> npu-tile-loops -> npu-bufferize -> npu-schedule -> npu-task-canonicalize (peepholes
inside each task, once npu-schedule has fixed its range) -> npu-events -> npu-memplan. The IR is verified after every
pass (or, with verify-each=false, once at the end); a failure names the pass."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from lowering import get_all_passes
from lowering.errors import CompileError
from lowering.graph.fuse import check_rules
from npu_dialects import make_context
from npu_dialects.arch import Arch, set_arch
from npu_dialects.weights import attach_weights

DEFAULT_PIPELINE: tuple[str, ...] = (
    "npu-canonicalize", "npu-constant-fold", "npu-shape-inference", "npu-bn-fold", "npu-dce", "npu-cse",
    "npu-fuse", "npu-split-rows", "npu-tile", "npu-layer-group", "npu-tile-loops", "npu-bufferize", "npu-schedule",
    "npu-task-canonicalize", "npu-events", "npu-memplan")


def run_pass(p: ModulePass, ctx: Context, module: ModuleOp, verify: bool = True) -> None:
    """Apply one pass and (by default) verify the result, naming the pass on failure."""
    p.apply(ctx, module)
    if verify:
        verify_after(p.name, module)


def verify_after(pass_name: str, module: ModuleOp) -> None:
    try:
        module.verify()
    except VerifyException as e:
        raise CompileError(pass_name, f"IR does not verify after the pass: {e}") from e


@dataclass(frozen=True)
class NpuDefault(ModulePass):
    """Run the default pipeline (ONNX-imported graph -> scheduled, planned tasks).

    Options: `disable=npu-fuse,...` skips passes by name (for bisection; the
    passes from npu-tile on are needed to reach executable tasks);
    `fuse-disable=rule,...` switches fusion rules off; `double-buffer=false`
    makes npu-tile never double buffer; `line-buffers=auto|always|never` goes to
    npu-layer-group; `verify-each=false`
    verifies only the final IR (verification is about half of the compile time
    of a large model; the lit suites and `npu-opt` verify after every pass)."""

    name = "npu-default"
    disable: tuple[str, ...] = field(default=())
    fuse_disable: tuple[str, ...] = field(default=())
    double_buffer: bool = True
    line_buffers: str = "auto"
    verify_each: bool = True

    def pass_options(self) -> dict[str, dict[str, object]]:
        """Pass name -> the options this pipeline's own options set on it."""
        return {"npu-fuse": {"disable": self.fuse_disable},
                "npu-bn-fold": {"conv": "conv-bn" not in self.fuse_disable},
                "npu-tile": {"double_buffer": self.double_buffer},
                "npu-layer-group": {"line_buffers": self.line_buffers}}

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        unknown = [n for n in self.disable if n not in DEFAULT_PIPELINE]
        if unknown:
            raise CompileError(self.name, f"cannot disable unknown pass(es) {', '.join(unknown)} "
                                          f"(pipeline: {', '.join(DEFAULT_PIPELINE)})")
        check_rules(self.fuse_disable, self.name)
        passes = get_all_passes()
        options = self.pass_options()
        for pass_name in DEFAULT_PIPELINE:
            if pass_name in self.disable:
                continue
            p = passes[pass_name]()(**options.get(pass_name, {}))
            run_pass(p, ctx, op, self.verify_each)
        if not self.verify_each:
            verify_after(self.name, op)


def compile_module(module: ModuleOp, arch: Arch | None = None, weights: dict | None = None,
                   **options) -> ModuleOp:
    """Compile a graph-level module in place through `npu-default` and return it.
    `weights` are the module's weights (passes may add folded ones: read the final
    set with `npu_dialects.weights.weights_of(module)`); `options` go to NpuDefault
    (e.g. `verify_each=False` for speed). Raises CompileError (a DiagnosticException)
    for anything the user must fix."""
    if arch is not None:
        set_arch(module, arch)
    if weights is not None:
        attach_weights(module, weights)
    try:
        NpuDefault(**options).apply(make_context(), module)
    except VerifyException as e:  # an op a pass built does not verify (a CompileError passes through)
        raise CompileError("npu-default", str(e)) from e
    return module
