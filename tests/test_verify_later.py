"""The last verification of `npu-compile` runs in a forked process beside packaging and
writing (`lowering/verify_later.py`): a module that does not verify still fails the
compile with the verifier's message, naming npu-default, and leaves no executable;
a good one is written as before. The Python API verifies in place, as always."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

from lowering import verify_later
from tools.api import compile as compile_model
from tools.cli import UserError
from tools.npu_compile import main as npu_compile

MLP = Path(__file__).parent / "models" / "mlp.onnx"


def _fail_final_verify(monkeypatch) -> None:
    """Every module.verify() of a task-level module fails (the compile verifies once, at the end)."""
    real = ModuleOp.verify

    def verify(self, verify_nested_ops: bool = True) -> None:
        if "npu_task.task" in str(self):
            raise VerifyException("planted: the task-level IR is wrong")
        real(self, verify_nested_ops)
    monkeypatch.setattr(ModuleOp, "verify", verify)


def test_a_failure_in_the_forked_verification_fails_the_compile(tmp_path, capsys, monkeypatch):
    _fail_final_verify(monkeypatch)
    out = tmp_path / "m.npuexe"
    assert npu_compile([str(MLP), "-o", str(out), "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert "npu-default" in err and "IR does not verify after the pass" in err
    assert "planted: the task-level IR is wrong" in err
    assert not out.exists() and not list(tmp_path.glob(".*.tmp"))


def test_the_api_verifies_in_place(monkeypatch):
    _fail_final_verify(monkeypatch)
    with pytest.raises(UserError, match="planted"):
        compile_model(str(MLP))


def test_a_good_compile_reports_the_forked_verification(tmp_path, capsys):
    out = tmp_path / "m.npuexe"
    assert npu_compile([str(MLP), "-o", str(out), "--no-cache", "--time-passes"]) == 0
    assert out.is_file() and len(verify_later.SECONDS) == 1
    assert "verify (forked, beside packaging and writing)" in capsys.readouterr().err
