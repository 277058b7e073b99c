"""Pass-writing help (issue 20 item 5): `npu-opt --list-passes` lists every option of
every pass with its type and default, and the defaults it prints are what `pass{k=v}`
takes; the template pass `npu-example-fold-idempotent` folds f(f(x)), declines
otherwise, and checks its option."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from lowering import get_all_passes
from lowering.errors import CompileError
from lowering.graph.example_fold_idempotent import IDEMPOTENT, ExampleFoldIdempotent
from npu_dialects import make_context
from npu_dialects.graph import ELEMENTWISE
from tools.npu_opt import list_passes, main, option_lines, parse_passes


def listing_blocks(text: str) -> dict[str, list[str]]:
    """Pass name -> its option lines, from `--list-passes` output."""
    blocks: dict[str, list[str]] = {}
    name = ""
    for line in text.splitlines():
        if line.startswith("      "):
            blocks[name].append(line.strip())
        else:
            name = line.split()[0]
            blocks[name] = []
    return blocks


def test_list_passes_shows_every_option_with_type_and_default(capsys):
    assert main(["--list-passes"]) == 0
    blocks = listing_blocks(capsys.readouterr().out)
    available = get_all_passes()
    assert set(available) <= set(blocks)
    for name, factory in available.items():
        fields = [f.name.replace("_", "-") for f in dataclasses.fields(factory()) if f.init and f.name != "name"]
        assert [ln.split(":")[0] for ln in blocks[name]] == fields, name
    assert blocks["npu-layer-group"][0] == "max-kernels: int = 128"
    assert blocks["npu-tile"] == ["double-buffer: bool = true"]
    assert blocks["npu-memplan"] == []


def test_listed_defaults_are_what_the_option_syntax_takes():
    available = get_all_passes()
    checked = 0
    for name, factory in available.items():
        cls = factory()
        for line in option_lines(cls):
            option, default = line.split(": ", 1)[0], line.split(" = ", 1)[-1]
            if default == "(empty)":
                continue
            (parsed,) = parse_passes(available, f"{name}{{{option}={default}}}")
            assert parsed == cls(), (name, option, default)
            checked += 1
    assert checked >= 8


def test_list_passes_names_an_unimportable_pass():
    def broken():
        raise ImportError("no module named 'x'")

    text = list_passes({"npu-broken": broken, "npu-tile": get_all_passes()["npu-tile"]})
    assert "npu-broken" in text and "(unavailable: no module named 'x')" in text
    assert "      double-buffer: bool = true" in text


CHAIN = """func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = npu_graph.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  %c = npu_graph.abs %b : (tensor<4xf32>) -> tensor<4xf32>
  %d = npu_graph.abs %c : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b, %d : tensor<4xf32>, tensor<4xf32>
}
"""


def ops_after(text: str, pass_: ExampleFoldIdempotent) -> list[str]:
    from xdsl.parser import Parser

    module = Parser(make_context(), text).parse_module()
    assert isinstance(module, ModuleOp)
    pass_.apply(make_context(), module)
    module.verify()
    return [op.name for op in module.walk() if op.name.startswith("npu_graph.")]


def test_template_pass_folds_and_declines():
    assert ops_after(CHAIN, ExampleFoldIdempotent()) == ["npu_graph.relu", "npu_graph.abs"]
    assert ops_after(CHAIN, ExampleFoldIdempotent(ops=("abs",))) == ["npu_graph.relu"] * 2 + ["npu_graph.abs"]
    assert ops_after(CHAIN, ExampleFoldIdempotent(ops=())) == ["npu_graph.relu"] * 2 + ["npu_graph.abs"] * 2


@pytest.mark.parametrize("fn", IDEMPOTENT)
def test_idempotent_functions_are_idempotent(fn):
    """The claim the pattern rests on, checked with each op's own numpy semantics."""
    f = ELEMENTWISE[fn][1]
    x = np.array([-2.5, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.7, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(f(f(x)), f(x))


def test_template_pass_rejects_a_function_that_is_not_idempotent():
    with pytest.raises(CompileError, match="'neg' is not idempotent"):
        ops_after(CHAIN, ExampleFoldIdempotent(ops=("relu", "neg")))
