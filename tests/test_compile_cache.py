"""The compile cache (`tools/compile_cache.py`, through `npu-compile`, `npu-run` and
`tools.api.compile`): a repeated compile is a hit whose executable is byte-identical
to a fresh compile; a weights-only change reuses the import and the program and gives
the bytes a fresh compile gives; a structural change, another arch or pipeline or a
planted compiler switch misses; a corrupt entry at any level is reported, rebuilt and
never served; writes leave no partial files; the hit path of npu-compile loads neither
the compiler nor numpy; --no-cache, NPU_NO_CACHE and the default directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tools.api import compile as compile_model
from tools.compile_cache import Cache, cache_dir, model_digests
from tools.npu_compile import main as npu_compile
from tools.npu_run import main as npu_run

MODELS = Path(__file__).parent / "models"
ROOT = Path(__file__).parent.parent


def _compile(capsys, model: Path, out: Path, *extra: str) -> str:
    assert npu_compile([str(model), "-o", str(out), *extra]) == 0
    return capsys.readouterr().out


def _cache_line(text: str) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith("cache:"))


def _fresh(model: Path, tmp_path: Path, *extra: str) -> bytes:
    out = tmp_path / "fresh.npuexe"
    assert npu_compile([str(model), "-o", str(out), "--no-cache", *extra]) == 0
    return out.read_bytes()


def _scaled_weights(src: Path, dst: Path, factor: float) -> None:
    """`src` with every large float initializer scaled: a weights-only change."""
    m = onnx.load(str(src))
    for init in m.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype == np.float32 and a.size > 16:
            init.CopyFrom(numpy_helper.from_array((a * factor).astype(np.float32), init.name))
    onnx.save(m, str(dst))


def test_hit_is_the_fresh_compile(tmp_path, capsys):
    cache = tmp_path / "cache"
    first = _compile(capsys, MODELS / "lenet.onnx", tmp_path / "a.npuexe", "--cache-dir", str(cache))
    assert "import miss, graph miss, executable miss" in _cache_line(first)
    stored = next((cache / "exe").glob("*.npuexe"))
    assert os.path.samefile(stored, tmp_path / "a.npuexe")  # (the entry it stored, linked: not written twice)
    second = _compile(capsys, MODELS / "lenet.onnx", tmp_path / "b.npuexe", "--cache-dir", str(cache))
    assert "cache:     executable hit" in second
    assert second.splitlines()[1:-1] == first.splitlines()[1:-1]  # the same summary
    fresh = _fresh(MODELS / "lenet.onnx", tmp_path)
    assert (tmp_path / "a.npuexe").read_bytes() == (tmp_path / "b.npuexe").read_bytes() == fresh
    assert oct((tmp_path / "b.npuexe").stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    assert npu_run([str(tmp_path / "b.npuexe"), "--check"]) == 0
    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp")]  # atomic writes leave nothing


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("model", ["lenet.onnx", "mlp.onnx"])
def test_weights_only_change_reuses_import_and_program(tmp_path, capsys, model):
    """Through the Python API (npu-compile rebuilds such a model at level 0 first:
    tests/test_reweigh.py): the import and the program are reused."""
    cache = Cache(tmp_path / "cache")
    a = compile_model(str(MODELS / model), cache=cache)
    changed = tmp_path / model
    _scaled_weights(MODELS / model, changed, 1.5)
    cache.events.clear()
    b = compile_model(str(changed), cache=cache)
    assert cache.events == [("import", "hit"), ("graph", "miss"), ("executable", "program reused, weights repacked")]
    b.save(tmp_path / "b.npuexe")
    assert (tmp_path / "b.npuexe").read_bytes() == _fresh(changed, tmp_path)
    assert b.to_bytes() != a.to_bytes()
    assert npu_run([str(tmp_path / "b.npuexe"), "--check"]) == 0


def test_structure_arch_pipeline_and_switches_miss(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    args = ["--cache-dir", str(cache)]
    _compile(capsys, MODELS / "mlp.onnx", tmp_path / "a.npuexe", *args)
    text = _compile(capsys, MODELS / "mlp.onnx", tmp_path / "b.npuexe", "--arch", "default,cores=1", *args)
    assert "import hit, graph miss, executable miss" in text  # the import does not depend on the arch
    text = _compile(capsys, MODELS / "mlp.onnx", tmp_path / "c.npuexe", "-p", "npu-default", *args)
    assert "import hit, executable miss" in text
    m = onnx.load(str(MODELS / "mlp.onnx"))
    m.graph.node[-1].name = "renamed"  # a structural change (node names become locations)
    onnx.save(m, str(tmp_path / "renamed.onnx"))
    assert "import miss" in _compile(capsys, tmp_path / "renamed.onnx", tmp_path / "d.npuexe", *args)
    monkeypatch.setenv("NPU_DISABLE_PATTERNS", "fold-reshape")
    assert "graph miss" in _compile(capsys, MODELS / "mlp.onnx", tmp_path / "e.npuexe", *args)


def test_weights_only_digest_keeps_structure():
    m = onnx.load(str(MODELS / "mlp.onnx"))
    before = model_digests(m)
    init = max(m.graph.initializer, key=lambda i: np.prod(i.dims))
    a = numpy_helper.to_array(init)
    init.CopyFrom(numpy_helper.from_array(a + 1, init.name))
    after = model_digests(m)
    assert after.structure == before.structure and after.weights != before.weights
    assert [n for n in before.tensors if before.tensors[n] != after.tensors[n]] == [init.name]


def test_same_model_elsewhere_records_its_own_path(tmp_path, capsys):
    cache = tmp_path / "cache"
    _compile(capsys, MODELS / "mlp.onnx", tmp_path / "a.npuexe", "--cache-dir", str(cache))
    copy = tmp_path / "copy.onnx"
    copy.write_bytes((MODELS / "mlp.onnx").read_bytes())
    text = _compile(capsys, copy, tmp_path / "b.npuexe", "--cache-dir", str(cache))
    assert f"model:     {copy}" in text
    os.utime(copy, (1, 1))  # old enough to be remembered by stat
    assert npu_run([str(tmp_path / "b.npuexe"), "--check"]) == 0


@pytest.mark.parametrize("level", ["exe", "graph", "import"])
def test_corrupt_entry_is_reported_and_rebuilt(tmp_path, capsys, level):
    cache = tmp_path / "cache"
    _compile(capsys, MODELS / "lenet.onnx", tmp_path / "a.npuexe", "--cache-dir", str(cache))
    entry = next(p for p in (cache / level).iterdir() if p.suffix in (".npuexe", ".zip"))
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data[: len(data) - 7]) if level == "import" else bytes(data))
    if level != "exe":  # reach the damaged level: the levels after it are gone
        for p in (cache / "exe").iterdir():
            p.unlink()
        if level == "import":
            for p in (cache / "graph").iterdir():
                p.unlink()
    assert npu_compile([str(MODELS / "lenet.onnx"), "-o", str(tmp_path / "b.npuexe"), "--cache-dir", str(cache)]) == 0
    captured = capsys.readouterr()
    assert f"warning: compile cache: entry '{entry}' is corrupt" in captured.err
    assert "rebuilding it" in captured.err
    # (a.npuexe is a link to the entry it stored, damaged with it in place: as a hit's output)
    assert (tmp_path / "b.npuexe").read_bytes() == _fresh(MODELS / "lenet.onnx", tmp_path)
    text = _compile(capsys, MODELS / "lenet.onnx", tmp_path / "c.npuexe", "--cache-dir", str(cache))
    assert "cache:     executable hit" in text


def test_hit_links_its_output_and_an_output_written_in_place_is_caught(tmp_path, capsys):
    """A hit gives its output the entry's inode (no 100 MB copy); writing into that
    output in place damages the entry too, which the next hit reports and rebuilds."""
    cache = tmp_path / "cache"
    _compile(capsys, MODELS / "lenet.onnx", tmp_path / "a.npuexe", "--cache-dir", str(cache))
    _compile(capsys, MODELS / "lenet.onnx", tmp_path / "b.npuexe", "--cache-dir", str(cache))
    entry = next(p for p in (cache / "exe").iterdir() if p.suffix == ".npuexe")
    assert (tmp_path / "b.npuexe").stat().st_ino == entry.stat().st_ino
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".link")]
    good = (tmp_path / "b.npuexe").read_bytes()
    with open(tmp_path / "b.npuexe", "r+b") as f:  # (in place: the entry's bytes too)
        f.seek(len(good) // 2)
        f.write(bytes([good[len(good) // 2] ^ 0xFF]))
    assert npu_compile([str(MODELS / "lenet.onnx"), "-o", str(tmp_path / "c.npuexe"), "--cache-dir", str(cache)]) == 0
    assert f"warning: compile cache: entry '{entry}' is corrupt" in capsys.readouterr().err
    assert (tmp_path / "c.npuexe").read_bytes() == good


def test_npu_run_uses_the_cache_unless_the_compile_is_observed(tmp_path, capsys):
    cache = tmp_path / "cache"
    args = [str(MODELS / "mlp.onnx"), "--cache-dir", str(cache), "--check", "--report"]
    assert npu_run([*args, str(tmp_path / "r1.json")]) == 0
    assert npu_run([*args, str(tmp_path / "r2.json")]) == 0
    r1, r2 = (json.loads((tmp_path / f"r{i}.json").read_text()) for i in (1, 2))
    assert [e["outcome"] for e in r1["compile_cache"]] == ["miss", "miss", "miss", "tile-search 0 hit, 3 miss"]
    assert r1["compile_cache"][-1]["level"] == "kernels"  # (the report's per-kernel line too)
    assert r2["compile_cache"] == [{"level": "executable", "outcome": "hit"}]
    assert r1["cycles"] == r2["cycles"] and r2["check"]["ok"]
    # observed (remarks, pass times, pictures): every pass runs, only the kernels' searches are shared
    assert npu_run([*args, str(tmp_path / "r3.json"), "--remarks", str(tmp_path / "rem.txt")]) == 0
    r3 = json.loads((tmp_path / "r3.json").read_text())
    assert r3["compile_cache"] == [{"level": "executable", "outcome": "bypassed (the compile reports on itself)"},
                                   {"level": "kernels", "outcome": "tile-search 3 hit, 0 miss"}]
    assert (tmp_path / "rem.txt").read_text().strip()  # the compile really ran
    capsys.readouterr()
    assert npu_run([*args, str(tmp_path / "r4.json"), "--remarks", str(tmp_path / "rem4.txt"), "--no-cache",
                    "--time-passes", "--html", str(tmp_path / "r.html")]) == 0
    assert "compile_cache" not in json.loads((tmp_path / "r4.json").read_text())
    assert (tmp_path / "rem4.txt").read_text() == (tmp_path / "rem.txt").read_text()  # (a hit remarks as a search)
    assert "compile cache: off" in (tmp_path / "r.html").read_text()
    capsys.readouterr()
    assert npu_run([*args, str(tmp_path / "r5.json"), "--time-passes", "--html", str(tmp_path / "r.html")]) == 0
    assert "kernels tile-search 3 hit, 0 miss" in capsys.readouterr().err
    assert "compile cache: executable bypassed (the compile reports on itself), kernels tile-search 3 hit" in \
        (tmp_path / "r.html").read_text()


def test_off_switches_and_default_directory(tmp_path, capsys, monkeypatch):
    assert cache_dir(None, disabled=True) is None
    monkeypatch.setenv("NPU_NO_CACHE", "1")
    assert cache_dir() is None
    assert cache_dir(str(tmp_path)) == tmp_path  # the command line wins
    monkeypatch.delenv("NPU_NO_CACHE")
    monkeypatch.delenv("NPU_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "npu-compiler"
    text = _compile(capsys, MODELS / "mlp.onnx", tmp_path / "a.npuexe")
    assert str(tmp_path / "xdg" / "npu-compiler") in _cache_line(text)
    text = _compile(capsys, MODELS / "mlp.onnx", tmp_path / "b.npuexe", "--no-cache")
    assert _cache_line(text) == "cache:     off"


def test_api_cache_and_trim(tmp_path):
    cache = Cache(tmp_path / "cache")
    a = compile_model(str(MODELS / "mlp.onnx"), cache=cache)
    b = compile_model(str(MODELS / "mlp.onnx"), cache=cache)
    assert cache.events[-1] == ("executable", "hit") and a.to_bytes() == b.to_bytes()
    assert cache.trim(0) > 0
    assert not [p for level in ("import", "graph", "exe") for p in (cache.root / level).iterdir()]


def test_hit_loads_neither_compiler_nor_numpy(tmp_path):
    model = tmp_path / "mlp.onnx"
    model.write_bytes((MODELS / "mlp.onnx").read_bytes())
    cache = tmp_path / "cache"
    code = ("import sys; from tools.npu_compile import main; "
            f"rc = main([{str(model)!r}, '-o', {str(tmp_path / 'x.npuexe')!r}, '--cache-dir', {str(cache)!r}]); "
            "print(rc, sorted(m for m in ('numpy', 'xdsl', 'onnx', 'lowering') if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NPU_CACHE_STABLE_SECONDS": "0"}  # (the file is new)
    env.pop("NPU_NO_CACHE", None)
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert cold.stdout.splitlines()[-1].startswith("0 ['lowering', 'numpy', 'onnx', 'xdsl']"), cold.stderr
    assert warm.stdout.splitlines()[-1] == "0 []", warm.stderr
    assert "cache:     executable hit" in warm.stdout


def test_rewrite_in_place_with_restored_mtime_misses(tmp_path, capsys, monkeypatch):
    """A weight changed in place, the same size and the mtime put back (as a copy tool
    preserving times does): the ctime changed, so the model is hashed again and the
    executable is the new model's (was: 'executable hit' and the old program)."""
    monkeypatch.setenv("NPU_CACHE_STABLE_SECONDS", "0")  # remember the new file by stat at once
    model, cache = tmp_path / "mlp.onnx", tmp_path / "cache"
    model.write_bytes((MODELS / "mlp.onnx").read_bytes())
    os.utime(model, ns=(1_000_000_000, 1_000_000_000))
    _compile(capsys, MODELS / "mlp.onnx", tmp_path / "warm.npuexe", "--cache-dir", str(cache))
    _compile(capsys, model, tmp_path / "a.npuexe", "--cache-dir", str(cache))
    assert "cache:     executable hit" in _compile(capsys, model, tmp_path / "a.npuexe", "--cache-dir", str(cache))
    before = model.stat()
    _scaled_weights(model, tmp_path / "scaled.onnx", 1.5)
    data = (tmp_path / "scaled.onnx").read_bytes()
    assert len(data) == before.st_size
    with open(model, "r+b") as f:  # in place: the same inode
        f.write(data)
    os.utime(model, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = model.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    text = _compile(capsys, model, tmp_path / "b.npuexe", "--cache-dir", str(cache))
    assert "executable hit" not in _cache_line(text)
    assert (tmp_path / "b.npuexe").read_bytes() == _fresh(model, tmp_path)
    assert (tmp_path / "b.npuexe").read_bytes() != (tmp_path / "a.npuexe").read_bytes()


def test_a_changed_layer_searches_only_its_kernels(tmp_path, capsys):
    """Below the model level (issue 47 item 2): a model whose one layer changed shape
    reuses the tile searches of every kernel it shares with a model compiled before,
    and its executable is byte for byte a fresh compile's."""
    from tools.testkit.transformers import bert_layers
    old, new = tmp_path / "bert.onnx", tmp_path / "bert_ffn.onnx"
    onnx.save(bert_layers(layers=2, seq=16, hidden=64, heads=2, ffn=128), str(old))
    onnx.save(bert_layers(layers=2, seq=16, hidden=64, heads=2, ffn=128, ffn_of={1: 96}), str(new))
    cache = tmp_path / "cache"
    first = _cache_line(_compile(capsys, old, tmp_path / "a.npuexe", "--cache-dir", str(cache)))
    assert "kernels tile-search 0 hit" in first, first
    line = _cache_line(_compile(capsys, new, tmp_path / "b.npuexe", "--cache-dir", str(cache)))
    hit, miss = (int(n) for n in re.search(r"tile-search (\d+) hit, (\d+) miss", line).groups())
    # the second layer's FFN (its two matmuls and what fused with them) is new, the rest is known
    assert hit >= 4 and 1 <= miss <= 3, line
    assert (tmp_path / "b.npuexe").read_bytes() == _fresh(new, tmp_path)
    capsys.readouterr()
    # without the cache's folder of kernels, the same compile searches every kernel again
    for p in (cache / "exe").iterdir():
        p.unlink()
    (cache / "graph").rename(tmp_path / "graph")
    line = _cache_line(_compile(capsys, new, tmp_path / "c.npuexe", "--cache-dir", str(cache)))
    assert f"tile-search {hit + miss} hit, 0 miss" in line, line


def test_a_model_file_is_hashed_once_per_process(tmp_path, monkeypatch):
    """npu-compile's level 0 attempt and the compile after a miss both ask the model's
    sha256 (`source_of`): the second answer comes from the first while the file is
    unchanged, and a file rewritten since is read again."""
    from tools import compile_cache
    path = tmp_path / "m.onnx"
    path.write_bytes(b"first")
    monkeypatch.setenv("NPU_CACHE_STABLE_SECONDS", "0")
    first = compile_cache.source_of(str(path))
    reads = []
    real_open = open

    def counting_open(file, *a, **k):
        reads.append(file)
        return real_open(file, *a, **k)
    monkeypatch.setattr("builtins.open", counting_open)
    assert compile_cache.source_of(str(path)) == first and reads == []
    path.write_bytes(b"other content")
    again = compile_cache.source_of(str(path))
    assert reads == [str(path)] and again["sha256"] != first["sha256"]
    monkeypatch.setenv("NPU_CACHE_STABLE_SECONDS", "3600")  # (a file changed this hour: never remembered)
    compile_cache.source_of(str(path))
    compile_cache.source_of(str(path))
    assert reads == [str(path)] * 3
