"""The generated reference (issue 46 item 1, `tools/gen_docs.py`): docs/dialects/*.md and
docs/passes.md are what `python -m tools.gen_docs` generates now (CI fails on a stale
page), a known op appears with its operands, attributes, verifier and example, a pass
with its options, and `--check` names a stale, missing or orphan page."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tools import gen_docs


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return gen_docs.generate()


def test_generated_docs_are_up_to_date(pages):
    problems = gen_docs.stale(pages)
    assert not problems, "\n".join(problems)


def test_design_document_is_in_the_repository():
    text = (gen_docs.ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert text.startswith("# npu-compiler: architecture blueprint")


def section(page: str, title: str) -> str:
    start = page.index(f"### `{title}`")
    end = page.find("\n### ", start + 1)
    return page[start:end if end >= 0 else len(page)]


def test_conv2d_has_its_operands_attributes_verifier_and_example(pages):
    conv = section(pages["docs/dialects/npu_graph.md"], "npu_graph.conv2d")
    for row in ("| `input` | `TensorType` | single |", "| `weight` | `TensorType` | single |",
                "| `bias` | `TensorType` | optional |", "| `result` | `TensorType` | single |",
                "| `strides` | attribute | optional | `DenseArrayBase` | `(1, 1)` (builder) |"):
        assert row in conv, row
    assert "**Traits**: `NoMemoryEffect`" in conv
    assert "`'npu_graph.conv2d': input and weight must be 4-D, got … and …`" in conv
    assert "**Example** (from `tests/filecheck/npu_graph/ops.mlir`)" in conv
    assert "npu_graph.conv2d %" in conv.split("```mlir", 1)[1]


def test_declared_defaults_traits_and_attributes(pages):
    kernel = section(pages["docs/dialects/npu_tile.md"], "npu_tile.kernel")
    assert "| `parts` | property | optional | `IntegerAttr` | `1 : i64` (declared) |" in kernel
    assert "`SingleBlockImplicitTerminator(npu_tile.yield)`" in kernel
    kinds = section(pages["docs/dialects/npu_tile.md"], "npu_tile.kind")
    assert "**Values**: `matmul`, `conv2d`" in kinds
    arch = pages["docs/dialects/npu.md"]
    assert "| `cores` | int | `4` |" in arch and "| `cube` | tuple[int, int, int] | `16x16x16` |" in arch
    assert {f"docs/dialects/{d}.md" for d in ("npu", "npu_graph", "npu_tile", "npu_dma", "npu_compute",
                                               "npu_task")} <= set(pages)


def test_passes_page_lists_options_with_defaults_and_help(pages):
    text = pages["docs/passes.md"]
    from lowering import PASSES
    for name in PASSES:
        assert f"## `{name}`" in text, name
    assert "| `max-kernels` | `int` | `128` | `max-kernels` (128) bounds a group's length" in text
    assert "Checked: `max-kernels must be at least 2, got …`" in text
    assert "| `double-buffer` | `bool` | `true` |" in text


def test_check_names_stale_missing_and_orphan_pages(pages, tmp_path: Path, capsys, monkeypatch):
    gen_docs.write(pages, tmp_path)
    assert gen_docs.stale(pages, tmp_path) == []
    graph = tmp_path / "docs/dialects/npu_graph.md"
    graph.write_text(graph.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    (tmp_path / "docs/passes.md").unlink()
    shutil.copy(tmp_path / "docs/dialects/npu.md", tmp_path / "docs/dialects/npu_gone.md")
    assert gen_docs.stale(pages, tmp_path) == [
        "docs/dialects/npu_graph.md is stale: run python -m tools.gen_docs",
        "docs/passes.md is missing: run python -m tools.gen_docs",
        "docs/dialects/npu_gone.md is not generated any more: run python -m tools.gen_docs (it deletes it)"]
    monkeypatch.setattr(gen_docs, "ROOT", tmp_path)
    monkeypatch.setattr(gen_docs, "generate", lambda root=tmp_path: pages)
    assert gen_docs.main(["--check"]) == 1
    assert capsys.readouterr().err.count("\n") == 3
    assert gen_docs.main([]) == 0
    assert gen_docs.main(["--check"]) == 0
    assert not (tmp_path / "docs/dialects/npu_gone.md").exists()
