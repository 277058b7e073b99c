"""Plugins (npu_dialects/plugins.py): the example plugin of examples/plugin, installed
into a temporary virtual environment that sees this project, registers a dialect, the
converter of the custom ONNX op com.example.Swish, a pass, a native PDL constraint, a
fusion rule and a chip;
a model using the op compiles and runs there with the pass, and matches numpy. In this
environment (no plugin) the same model is a diagnosed unsupported operator, and a
plugin whose entry point does not load is a one-line error naming it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "plugin"


def _swish_model(path: Path, beta: float = 1.5) -> None:
    n1 = helper.make_node("Swish", ["x"], ["s"], name="swish0", domain="com.example", beta=beta)
    n2 = helper.make_node("Relu", ["s"], ["y"], name="relu0")
    g = helper.make_graph([n1, n2], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    onnx.save(m, path)


def _venv(where: Path, *packages: Path) -> Path:
    """A virtual environment seeing this environment's packages plus `packages`."""
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(where)
    py = where / "bin" / "python"
    for pkg in packages:  # (pip of this environment, installing into the venv)
        subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(pkg)],
                       check=True, capture_output=True, text=True, timeout=300)
    return py


def _run(py: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NPU_NO_CACHE": "1"}
    return subprocess.run([str(py), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def plugin_python(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("plugin") / "plugin"
    shutil.copytree(PLUGIN, src, ignore=shutil.ignore_patterns("build", "*.egg-info"))  # (builds never share a tree)
    return _venv(tmp_path_factory.mktemp("venv") / "env", src)


def test_plugin_op_and_pass_compile_and_run(plugin_python, tmp_path):
    model = tmp_path / "swish.onnx"
    _swish_model(model)
    listed = _run(plugin_python, "-m", "tools.npu_opt", "--list-passes", cwd=tmp_path)
    assert listed.returncode == 0 and "example-lower-swish" in listed.stdout
    x = np.random.default_rng(0).standard_normal((2, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    r = _run(plugin_python, "-m", "tools.npu_run", str(model), "-p", "builtin.module(example-lower-swish,npu-default)",
             "--inputs", "in.npz", "--outputs", "out.npz", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    y = np.load(tmp_path / "out.npz")["y"]
    want = np.maximum(x / (1 + np.exp(-1.5 * x)), 0)
    assert np.abs(y - want).max() <= 1e-5
    # the plugin's op in the IR, printed and parsed by npu-opt
    mlir = _run(plugin_python, "-m", "tools.npu_import", str(model), cwd=tmp_path)
    assert mlir.returncode == 0 and "example.swish" in mlir.stdout


def test_plugin_native_constraint_in_a_pdl_pattern(plugin_python, tmp_path):
    model = tmp_path / "swish.onnx"
    _swish_model(model, beta=1.0)
    rules = tmp_path / "rules.mlir"
    rules.write_text("""pdl.pattern @swish_one : benefit(1) {
  %t = pdl.type
  %x = pdl.operand
  %op = pdl.operation "example.swish"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "example.beta_is_one"(%op : !pdl.operation)
  pdl.rewrite %op {
    %neg = pdl.operation "npu_graph.neg"(%x : !pdl.value) -> (%t : !pdl.type)
    pdl.replace %op with %neg
  }
}
""")
    mlir = _run(plugin_python, "-m", "tools.npu_import", str(model), "-o", "m.mlir", cwd=tmp_path)
    assert mlir.returncode == 0, mlir.stderr
    r = _run(plugin_python, "-m", "tools.npu_opt", "m.mlir", "-p", f"npu-apply-patterns{{file={rules}}}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "npu_graph.neg" in r.stdout and "example.swish" not in r.stdout


def test_plugin_fusion_rule_and_chip(plugin_python, tmp_path):
    model = tmp_path / "swish.onnx"
    _swish_model(model)
    assert _run(plugin_python, "-m", "tools.npu_import", str(model), "-o", "m.mlir", cwd=tmp_path).returncode == 0
    fused = _run(plugin_python, "-m", "tools.npu_opt", "m.mlir", "-p", "example-lower-swish,npu-fuse", cwd=tmp_path)
    assert fused.returncode == 0, fused.stderr
    assert 'rule = "example-swish"' in fused.stdout
    off = _run(plugin_python, "-m", "tools.npu_opt", "m.mlir", "-p", "example-lower-swish,npu-fuse{disable=example-swish}",
               cwd=tmp_path)
    assert off.returncode == 0 and 'rule = "example-swish"' not in off.stdout and 'rule = "eltwise-chain"' in off.stdout
    chip = _run(plugin_python, "-m", "tools.npu_opt", "--print-arch", "example-edge", cwd=tmp_path)
    assert chip.returncode == 0 and "cores = 2" in chip.stdout and "sram_bytes = 262144" in chip.stdout


def test_without_the_plugin_the_op_is_unsupported(tmp_path):
    model = tmp_path / "swish.onnx"
    _swish_model(model)
    r = _run(Path(sys.executable), "-m", "tools.npu_run", str(model), cwd=tmp_path)
    assert r.returncode == 1
    assert "node 'swish0' (com.example.Swish, opset 1): unsupported operator" in r.stderr


def test_a_plugin_that_does_not_load_is_named(tmp_path):
    bad = tmp_path / "bad_plugin"
    (bad / "bad_plugin").mkdir(parents=True)
    (bad / "bad_plugin" / "__init__.py").write_text("")
    (bad / "pyproject.toml").write_text("""[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"
[project]
name = "bad-plugin"
version = "0.0.1"
[tool.setuptools]
packages = ["bad_plugin"]
[project.entry-points."npu_compiler.passes"]
broken = "bad_plugin.missing:Pass"
""")
    py = _venv(tmp_path / "env", bad)
    r = _run(py, "-m", "tools.npu_opt", "--list-passes", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "cannot load plugin entry point 'broken = bad_plugin.missing:Pass' (group npu_compiler.passes) of " \
           "package 'bad-plugin'" in r.stderr


def test_plugins_are_looked_for_only_where_a_package_declares_one(tmp_path, monkeypatch):
    """`_declared` reads the entry_points.txt of every package on sys.path: none with a
    plugin group here (the plugin metadata is then not parsed, nor importlib.metadata
    imported), and a package declaring one anywhere on the path is found, as
    importlib.metadata finds it."""
    import npu_dialects.plugins as plugins

    assert not plugins._declared()
    info = tmp_path / "site" / "some_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: some-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert not plugins._declared()
    (info / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n\n[npu_compiler.chips]\nmine = some_plugin:chips\n")
    assert plugins._declared()
    plugins._entry_points.cache_clear()
    try:
        assert [e.name for e in plugins.group_entry_points("npu_compiler.chips")] == ["mine"]
    finally:
        plugins._entry_points.cache_clear()
