"""Helpers to write task-level modules as text in simulator/runtime tests."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from lowering.task.unit_sync import sync_units
from npu_dialects import make_context


def D(*shape: int) -> str:
    """`memref<AxBxf32, "dram">`"""
    return f'memref<{"x".join(map(str, shape))}xf32, "dram">'


def S(*shape: int) -> str:
    """`memref<AxBxf32, "sram">`"""
    return f'memref<{"x".join(map(str, shape))}xf32, "sram">'


def task(kernel: str, core: int, body: str, *, waits: Sequence[int] = (), signals: Sequence[int] = (),
         loc: str | None = None, rng: tuple[int, int] = (0, 1)) -> str:
    attrs = [f"core = {core} : i64", f"range = array<i64: {rng[0]}, {rng[1]}>"]
    if waits:
        attrs.append(f"waits = array<i64: {', '.join(map(str, waits))}>")
    if signals:
        attrs.append(f"signals = array<i64: {', '.join(map(str, signals))}>")
    where = f' loc("{loc or kernel}")'
    return (f'npu_task.task "{kernel}" attributes {{{", ".join(attrs)}}} {{\n'
            f"^bb0(%lo_{kernel}: index, %hi_{kernel}: index):\n{body}\n}}{where}\n")


def module(inputs: Sequence[tuple[str, str]], outputs: Sequence[tuple[str, str]], body: str,
           attrs: str = "", verify: bool = True, fences: bool = True) -> ModuleOp:
    """Parse and verify `func.func @main(inputs..., outputs...)` holding `body` (`verify=False`:
    unverified, for tests of the simulator's own checks of IR the verifiers reject), with
    the fences between a core's units that `npu-unit-sync` inserts (`fences=False`: as written)."""
    args = ", ".join(f"%{n}: {t}" for n, t in [*inputs, *outputs])
    names_in = ", ".join(f'"{n}"' for n, _ in inputs)
    names_out = ", ".join(f'"{n}"' for n, _ in outputs)
    mod_attrs = f" attributes {{{attrs}}}" if attrs else ""
    text = (f"builtin.module{mod_attrs} {{\n"
            f"func.func @main({args}) attributes {{npu.inputs = [{names_in}], npu.outputs = [{names_out}]}} {{\n"
            f"{body}\nfunc.return\n}}\n}}\n")
    m = Parser(make_context(), text).parse_module()
    if verify:
        m.verify()
    if fences:
        sync_units(m)
    return m


CONSTS = "\n".join(f"%c{v} = arith.constant {v} : index" for v in (0, 1, 2, 4, 8, 16, 64, 128))
"""`%c0`, `%c1`, ... index constants (put at the top of a task body)."""
