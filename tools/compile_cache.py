"""The compile cache: `npu-compile` and `npu-run` reuse earlier compiles of an ONNX
model at levels keyed by content hashes (all with the compiler's fingerprint: its
sources and pyproject), so a repeated compile is a file copy and a weights-only change
runs no pass. Level 0 `derive/`: how an executable's weights follow from the model's
initializers (`tools/reweigh.py`; key: structure, bucket, pipeline, arch); level 1
`import/`: the imported graph IR (key: model structure, shape bucket); level 2
`graph/`: the IR after graph optimisation, npu-default up to npu-cse (key: level 1,
weights, pipeline, arch); level 3 `exe/`: the `.npuexe` (key: level 2's IR text,
pipeline, arch; or level 0's and the weights); below the model `kernels/`: per-kernel
results (npu-tile's searches, `lowering/kernel_cache.py`).
The *structure* is the model without its initializers of more than 16 elements of
the types the chip holds (`WEIGHT_TYPES`: float32, float16, bfloat16, int8, uint8,
int32; int64 ones are shapes and indices); the *weights* are their data. Off in the
Python API unless given; on in the tools under `$NPU_CACHE_DIR`, else `$XDG_CACHE_HOME/npu-compiler`
(`~/.cache/npu-compiler`); `--cache-dir`, `--no-cache` (or `NPU_NO_CACHE=1`).

Algorithm
---------
Compiles that report on themselves (remarks, pass timings, IR dumps, pictures)
bypass the model's levels (every pass runs); their kernels' searches still come from
`kernels/` (npu-run says so in its report, after the pass times and in the HTML).
Entries are written to a temporary file renamed into place; a corrupt one is
reported, deleted and rebuilt.
A model file's digests are remembered per (path, size, mtime, ctime, inode) in
`fingerprints/` (as ccache's direct mode; not when either time is in the last 2 s),
so a full hit reads no ONNX: level 2's small metadata gives the IR digest, level 3's
record the weights digest, and the executable's section crc32s are checked while it
is copied out. When only the weights changed, `npu-compile` first tries level 0
(`tools/reweigh.py`: the weights rebuilt from recipes into the cached image, no
pass). Otherwise: level 1 hits if the importer read
nothing but directly-used initializers whose data changed (it records them; an
initializer viewed in another shape by a Reshape, Unsqueeze, Squeeze or Flatten folded
at import counts as used directly, re-read in that shape); graph
optimisation re-runs (BatchNorm and constant folding compute weights from values);
its IR text is unchanged, so level 3's program is reused and repacked with the new
weights; the weights the back end made (layer groups' packed weights) are rebuilt
from their recipes (`npu_dialects.weights.rebuild`), and a program with a back-end
weight that has none (an attention mask) is compiled again. A kernel's result is keyed
by its signature (its ops, attributes, types, the arch, the pass options: never names
or weights), so every model shares them. Level 1 and 2 entries are zip files (each member crc-checked on read). The
cache is trimmed to `NPU_CACHE_MAX_BYTES` (default 4 GiB), least recently used first.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CACHE_ENV, NO_CACHE_ENV, MAX_ENV = "NPU_CACHE_DIR", "NPU_NO_CACHE", "NPU_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 4 << 30
LAYOUT = 1  # the entries' format: part of every key
STRUCTURAL_MAX_ELEMENTS = 16  # initializers up to this size count as structure (inlined in the IR)
DIGEST_SCHEME = 2  # what `model_digests` counts as weights (2: `WEIGHT_TYPES`); remembered digests of another are ignored
STABLE_SECONDS = 2.0  # a model file changed (mtime or ctime) more recently is not remembered by stat
STABLE_ENV = "NPU_CACHE_STABLE_SECONDS"
_ROOT = Path(__file__).resolve().parent.parent
_PACKAGES = ("npu_dialects", "lowering", "runtime", "sim", "tools")


class CacheCorrupt(Exception):
    """An entry that does not read back (truncated zip, bad crc, bad JSON, bad image)."""


def cache_dir(explicit: str | None = None, disabled: bool = False) -> Path | None:
    """The cache directory the tools use (None: caching off). The command line wins
    (`--no-cache`, then `--cache-dir`), then the environment (`NPU_NO_CACHE=1`, then
    `NPU_CACHE_DIR`), then the user cache directory."""
    if disabled:
        return None
    if explicit:
        return Path(explicit)
    if os.environ.get(NO_CACHE_ENV, "") not in ("", "0"):
        return None
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "npu-compiler"


_FINGERPRINT: str | None = None


def compiler_fingerprint() -> str:
    """sha256 of the compiler's Python sources, pyproject.toml (which pins xDSL) and the
    installed plugins: an edit to any of them, another release or plugin misses every entry."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        h = hashlib.sha256(f"npu-compile-cache {LAYOUT} {sys.version_info[:2]}".encode())
        files = [_ROOT / "pyproject.toml"] + [p for pkg in _PACKAGES for p in sorted((_ROOT / pkg).rglob("*.py"))]
        for p in files:
            try:
                data = p.read_bytes()
            except OSError:
                continue
            h.update(str(p.relative_to(_ROOT)).encode() + b"\0" + len(data).to_bytes(8, "little") + data)
        from npu_dialects.plugins import fingerprint as plugins_fingerprint
        h.update(plugins_fingerprint().encode())
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def key(*parts: Any) -> str:
    """A cache key: sha256 of the compiler fingerprint and `parts` (JSON values)."""
    text = json.dumps([compiler_fingerprint(), *parts], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# ----------------------------------------------------------------------------- digests


@dataclass
class ModelDigests:
    """`structure`: the model without its large initializers' data (`_is_weight`); `weights`:
    that data; `tensors`: each such initializer's data digest, by name."""

    structure: str
    weights: str
    tensors: dict[str, str] = field(default_factory=dict)
    file_sha256: str = ""  # of the model file, when remembered by stat

    def of(self, names: Any) -> str:
        """One digest of the named tensors' data (those in `tensors`)."""
        h = hashlib.sha256()
        for n in sorted(set(names) & self.tensors.keys()):
            h.update(n.encode() + b"\0" + self.tensors[n].encode())
        return h.hexdigest()


WEIGHT_TYPES = frozenset({1, 10, 16, 3, 2, 6})
"""The ONNX element types (`onnx.TensorProto`: FLOAT, FLOAT16, BFLOAT16, INT8, UINT8,
INT32) whose large initializers are weights, not structure: what a weights-only change
of a float, 16-bit or quantized model changes. What the importer or a pass reads of
their values is recorded where it is read (level 1's `read`, level 0's value set)."""


def _is_weight(init: Any) -> bool:
    n = 1
    for d in init.dims:
        n *= d
    return init.data_type in WEIGHT_TYPES and n > STRUCTURAL_MAX_ELEMENTS


def model_digests(model: Any) -> ModelDigests:
    """The digests of an `onnx.ModelProto` (`ModelDigests`)."""
    from lowering.importer.onnx_file import initializer_array, inlined
    h = hashlib.sha256()

    def part(b: bytes) -> None:
        h.update(len(b).to_bytes(8, "little") + b)

    part(str(model.ir_version).encode())
    for o in model.opset_import:
        part(o.SerializeToString(deterministic=True))
    g = model.graph
    for group in (g.node, g.input, g.output, g.value_info, g.sparse_initializer, model.functions):
        part(b"group")
        for item in group:
            part(item.SerializeToString(deterministic=True))
    tensors: dict[str, str] = {}
    part(b"initializers")
    for init in g.initializer:
        if _is_weight(init):
            data = init.raw_data or initializer_array(init).reshape(-1).view("u1").data
            tensors[init.name] = hashlib.sha256(data).hexdigest()
            part(json.dumps([init.name, list(init.dims), init.data_type]).encode())
        else:  # (the data left in the file read back in: where the file is does not count)
            part(inlined(init).SerializeToString(deterministic=True))
    d = ModelDigests(h.hexdigest(), "", tensors)
    d.weights = d.of(tensors)
    return d


def weights_digest(arrays: Mapping[str, Any], known: Mapping[str, str] | None = None) -> str:
    """One digest of named arrays (name, dtype, shape and bytes); an array named in
    `known` by the sha256 of its bytes given there (an initializer the importer kept as
    it is, digested by `model_digests`: its bytes are not read again)."""
    from runtime.image import done_with, sliced
    h = hashlib.sha256()
    known = known or {}
    for name in sorted(arrays):
        a = arrays[name]
        if name in known:
            h.update(json.dumps([name, str(a.dtype), list(a.shape), "sha256", known[name]]).encode())
            continue
        h.update(json.dumps([name, str(a.dtype), list(a.shape)]).encode())
        try:
            view = memoryview(a.tobytes() if not a.flags.c_contiguous else a).cast("B")
        except (ValueError, TypeError):  # (bf16: ml_dtypes arrays export no buffer format)
            view = memoryview(a.tobytes())
        for piece in sliced([view]):  # (a weight mapped from the model file given back as it is read)
            h.update(piece)
            done_with(piece)
    return h.hexdigest()


# ----------------------------------------------------------------------------- keys


def pipeline_key(pipeline: str | None, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a compile's pipeline contributes to the keys: its text, or the npu-default
    options (the levels 2 and 3 split applies only to npu-default)."""
    if pipeline is not None:
        return {"pipeline": pipeline}
    return {"npu-default": {k: list(v) if isinstance(v, tuple) else v for k, v in sorted((options or {}).items())}}


def level_keys(digests: ModelDigests, dims: Mapping[str, int] | None, pkey: Any, arch_key: str) -> tuple[str, str]:
    """The keys of levels 1 and 2. The test-only and debugging switches that change
    what the passes do are part of level 2's."""
    k1 = key("import", digests.structure, dict(dims or {}))
    env = {v: os.environ.get(v, "") for v in ("NPU_TEST_FAULT", "NPU_DISABLE_PATTERNS")}
    return k1, key("graph", k1, digests.weights, pkey, arch_key, env)


def derive_key(digests: ModelDigests, dims: Mapping[str, int] | None, pkey: Any, arch_key: str) -> str:
    """The key of level 0 (`tools/reweigh.py`): level 1's with the pipeline, the arch and
    the switches, without the weights."""
    k1, _ = level_keys(digests, dims, pkey, arch_key)
    env = {v: os.environ.get(v, "") for v in ("NPU_TEST_FAULT", "NPU_DISABLE_PATTERNS")}
    return key("derive", k1, pkey, arch_key, env)


def derived_key(k0: str, weights: str) -> str:
    """Level 3's key of an executable level 0 made (`tools/reweigh.py`): its record's
    key and the model's weights digest."""
    return key("exe-derived", k0, weights)


def lookup(cache: Cache, digests: ModelDigests, dims: Mapping[str, int] | None, pkey: Any,
           arch_key: str) -> tuple[str, str | None]:
    """(level 3 key, its weights digest) as far as the cache knows without compiling:
    an npu-default compile's level 3 key comes from level 2's IR digest ("" and None
    when level 2 has no entry)."""
    k1, k2 = level_keys(digests, dims, pkey, arch_key)
    if "pipeline" in pkey:
        return key("exe-custom", k2, pkey), digests.weights
    entry = cache.read_zip(cache.path("graph", k2, ".zip"), members=False)
    if entry is None:
        return "", None
    return key("exe", entry[0].get("ir_sha"), pkey, arch_key), entry[0].get("weights")


_SOURCES: dict[tuple, dict[str, Any]] = {}
"""`source_of` of the files this process hashed, by path and stat (npu-compile's level 0
attempt hashes the model, and the compile after a miss asks again: a second pass over a
340 MB BERT-base took 0.6 s)."""


def source_of(path: str) -> dict[str, Any]:
    """What an executable records of its ONNX model file (as `tools.api.compile`); a file
    hashed before by this process and unchanged since (by stat, not changed within
    `stable_seconds`, as `Cache.remember`) is not read again."""
    st = stable_stat(path)
    key = (os.path.abspath(path), *st) if st is not None else None
    if key is not None and key in _SOURCES:
        return dict(_SOURCES[key])
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    source = {"kind": "onnx", "path": os.path.abspath(path), "sha256": h.hexdigest()}
    if key is not None:
        _SOURCES[key] = dict(source)
    return source


def fast_hit(cache: Cache, path: str, arch_key: str, pipeline: str | None, out: str,
             digests: ModelDigests | None = None) -> dict[str, Any] | None:
    """A full hit without reading the model or loading the compiler: level 3's image
    copied to `out` (checked); its record, or None when anything is missing (or the
    arch names a chip file, whose contents the key must see: `tools.api.compile_cached`).
    `digests`: the model's, with its file's sha256, when they were just computed
    (default: remembered by stat)."""
    first = arch_key.split(",", 1)[0].strip()
    if first.endswith(".toml") or "/" in first or os.sep in first:
        return None
    digests = digests or cache.file_digests(path)
    if digests is None:
        return None
    k3, w2 = lookup(cache, digests, None, pipeline_key(pipeline), arch_key)
    record = cache.read_record(k3) if k3 else None
    source = {"kind": "onnx", "path": os.path.abspath(path), "sha256": digests.file_sha256}
    if record is None or record.get("weights") != w2 or record.get("source") != source:
        k3 = derived_key(derive_key(digests, None, pipeline_key(pipeline), arch_key), digests.weights)
        record, w2 = cache.read_record(k3), digests.weights  # (level 0's executable of these weights)
    if record is None or record.get("weights") != w2 or record.get("source") != source:
        return None
    if not cache.copy_exe(k3, out):
        return None
    cache.note("executable", "hit")
    return record


# ----------------------------------------------------------------------------- the store


def _atomic_write(path: Path, write: Callable[[Any], None], public: bool = False) -> None:
    """`write(file)` into a temporary file beside `path`, renamed into place; `public`
    gives it the mode open(path, "w") would (mkstemp's is 0600, right for cache entries)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        if public:
            os.chmod(tmp, _public_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _public_mode() -> int:
    """The mode open(path, "w") gives a new file (0o666 less the umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _link_public(src: Path, path: Path) -> bool:
    """Hard-link `src` to `path` (atomically: a link beside it renamed into place), with
    the mode open(path, "w") would give; False where no link can be made."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.link")
    try:
        tmp.unlink(missing_ok=True)
        os.link(src, tmp)
        os.chmod(tmp, _public_mode())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        return False
    return True


class Cache:
    """The cache directory: entries by level and key, the stat memo of model files,
    the trim. `events` lists what happened, one (level, outcome) per step, for the
    tools' summary line; `warn` prints a corrupt entry's report."""

    def __init__(self, root: Path, warn: Callable[[str], None] | None = None):
        self.root = Path(root)
        self.events: list[tuple[str, str]] = []
        self.warn = warn or (lambda msg: print(f"warning: {msg}", file=sys.stderr))
        self.stored: tuple[Path, list[Any]] | None = None  # (the image `write_exe` wrote last, its chunks)

    def path(self, level: str, k: str, ext: str) -> Path:
        return self.root / level / f"{k}{ext}"

    def note(self, level: str, outcome: str) -> None:
        self.events.append((level, outcome))

    def corrupt(self, path: Path, why: str) -> None:
        """Report a corrupt entry and delete it (the caller rebuilds)."""
        self.warn(f"compile cache: entry '{path}' is corrupt ({why}); rebuilding it")
        path.unlink(missing_ok=True)

    def touch(self, path: Path) -> None:
        try:
            os.utime(path)
        except OSError:
            pass

    # -- zip entries (levels 1 and 2) -------------------------------------------------

    def write_zip(self, path: Path, meta: dict[str, Any], text: str, arrays: Mapping[str, Any]) -> None:
        import numpy as np

        def write(f: Any) -> None:
            with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
                z.writestr("meta.json", json.dumps(meta))
                z.writestr("ir.mlir", text)
                for name, array in arrays.items():
                    with z.open(f"w/{name}.npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
        self._store(path, write)

    def read_zip(self, path: Path, members: bool = True) -> tuple[dict[str, Any], str, dict[str, Any]] | None:
        """(meta, IR text, arrays) of an entry; only meta unless `members`; None when
        absent; a corrupt entry is reported, deleted and None."""
        if not path.is_file():
            return None
        try:
            with zipfile.ZipFile(path) as z:
                meta = json.loads(z.read("meta.json"))
                if not isinstance(meta, dict):
                    raise CacheCorrupt("meta.json is not an object")
                if not members:
                    return meta, "", {}
                import numpy as np
                text = z.read("ir.mlir").decode()
                arrays = {}
                for info in z.infolist():
                    if info.filename.startswith("w/"):
                        with z.open(info) as f:
                            arrays[info.filename[2:-4]] = np.lib.format.read_array(f, allow_pickle=False)
        except (OSError, zipfile.BadZipFile, KeyError, ValueError, EOFError, CacheCorrupt) as e:
            self.corrupt(path, str(e).splitlines()[0] if str(e) else type(e).__name__)
            return None
        self.touch(path)
        return meta, text, arrays

    # -- executables (level 3) --------------------------------------------------------

    def read_record(self, k: str) -> dict[str, Any] | None:
        """Level 3's record (weights digest, source, summary) when its image is there."""
        rec_path, exe_path = self.path("exe", k, ".json"), self.path("exe", k, ".npuexe")
        if not rec_path.is_file():
            return None
        try:
            rec = json.loads(rec_path.read_text())
            if not isinstance(rec, dict) or not exe_path.is_file():
                raise CacheCorrupt("no executable beside the record" if isinstance(rec, dict) else "not an object")
        except (OSError, ValueError, CacheCorrupt) as e:
            self.corrupt(rec_path, str(e))
            exe_path.unlink(missing_ok=True)
            return None
        return rec

    def write_exe(self, k: str, chunks: list[Any], record: dict[str, Any]) -> Path:
        """Store level 3: the image (`Executable.chunks`), then its record."""
        exe_path = self.path("exe", k, ".npuexe")

        from runtime.image import write_chunks
        self._store(exe_path, lambda f: write_chunks(f, chunks))
        self._store(self.path("exe", k, ".json"), lambda f: f.write(json.dumps(record).encode()))
        self.stored = (exe_path, chunks)
        return exe_path

    def give_stored(self, out: str | os.PathLike[str]) -> list[Any] | None:
        """`out` hard-linked to the image this compile just stored (`write_exe`: the
        executable it returned), and that image's chunks; None (nothing done) when it
        stored none or no link can be made. npu-compile then writes no second copy."""
        if self.stored is None or not _link_public(self.stored[0], Path(out)):
            return None
        return self.stored[1]

    def link_exe(self, k: str, image: str | os.PathLike[str], record: dict[str, Any]) -> None:
        """Store level 3 from an image written elsewhere: a hard link to it (no copy; a
        file that cannot be linked, e.g. on another file system, is not stored)."""
        exe_path = self.path("exe", k, ".npuexe")
        try:
            exe_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = exe_path.with_name(f".{exe_path.name}.{os.getpid()}.tmp")
            os.link(image, tmp)
            os.replace(tmp, exe_path)
        except OSError:
            return
        self._store(self.path("exe", k, ".json"), lambda f: f.write(json.dumps(record).encode()))

    def copy_exe(self, k: str, out: str | os.PathLike[str]) -> bool:
        """Give `out` level 3's image once its crc32s check: a hard link to it (as
        `link_exe` stores one; entries are only ever replaced, never written in place,
        and a hit checks the crc32s again), or a copy (atomically, in the kernel) where
        no link can be made, e.g. across file systems; False (entry reported and
        deleted) when they do not check."""
        import mmap
        src = self.path("exe", k, ".npuexe")
        try:
            with open(src, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                check_image(data)
        except (OSError, ValueError, CacheCorrupt) as e:
            self.corrupt(src, str(e))
            self.path("exe", k, ".json").unlink(missing_ok=True)
            return False
        self.touch(src)
        if _link_public(src, Path(out)):
            return True

        def copy(f: Any) -> None:  # (in the kernel: sendfile, no copy through Python)
            with open(src, "rb") as s:
                size, at = os.fstat(s.fileno()).st_size, 0
                while at < size:
                    sent = os.sendfile(f.fileno(), s.fileno(), at, size - at)
                    if not sent:
                        raise OSError(f"'{src}' ended after {at} of its {size} bytes")
                    at += sent
        _atomic_write(Path(out), copy, public=True)
        return True

    # -- level 0 records (`tools/reweigh.py`) -----------------------------------------

    def write_json(self, level: str, k: str, value: Any) -> None:
        self._store(self.path(level, k, ".json"), lambda f: f.write(json.dumps(value).encode()))

    def read_json(self, level: str, k: str) -> Any | None:
        """An entry written by `write_json`, or None (a corrupt one reported and deleted)."""
        path = self.path(level, k, ".json")
        try:
            value = json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            self.corrupt(path, str(e).splitlines()[0] if str(e) else type(e).__name__)
            return None
        self.touch(path)
        return value

    # -- per-kernel results (`lowering.kernel_cache`) ----------------------------------

    def get(self, kind: str, k: str) -> Any | None:
        """A kernel's result stored by an earlier compile of this compiler, or None."""
        return self.read_json("kernels", key("kernel", kind, k))

    def put(self, kind: str, k: str, value: Any) -> None:
        self.write_json("kernels", key("kernel", kind, k), value)

    # -- model files ------------------------------------------------------------------

    def file_digests(self, path: str) -> ModelDigests | None:
        """A model file's digests remembered by stat, or None."""
        memo = self._memo_path(path)
        try:
            st = os.stat(path)
            rec = json.loads(memo.read_text())
            if rec["stat"] == _stat(st) and rec.get("scheme") == DIGEST_SCHEME:
                return ModelDigests(rec["structure"], rec["weights"], rec["tensors"], rec["sha256"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None

    def remember(self, path: str, digests: ModelDigests, file_sha256: str) -> None:
        """Remember a model file's digests (and its sha256) by its stat."""
        st = stable_stat(path)
        if st is None:
            return
        rec = {"scheme": DIGEST_SCHEME, "path": os.path.abspath(path), "stat": st, "structure": digests.structure,
               "weights": digests.weights, "tensors": digests.tensors, "sha256": file_sha256}
        self._store(self._memo_path(path), lambda f: f.write(json.dumps(rec).encode()))

    def _memo_path(self, path: str) -> Path:
        return self.root / "fingerprints" / (hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:40] + ".json")

    # -- writing and trimming ---------------------------------------------------------

    def _store(self, path: Path, write: Callable[[Any], None]) -> None:
        """Write an entry atomically; a cache that cannot be written is a warning, not an error."""
        try:
            _atomic_write(path, write)
        except OSError as e:
            self.warn(f"compile cache: cannot write '{path}': {e.strerror or e}")

    def trim(self, max_bytes: int | None = None) -> int:
        """Delete least recently used entries until the cache holds at most `max_bytes`
        (`NPU_CACHE_MAX_BYTES`, default 4 GiB); returns the bytes freed."""
        if max_bytes is None:
            try:
                max_bytes = int(os.environ.get(MAX_ENV) or DEFAULT_MAX_BYTES)
            except ValueError:
                max_bytes = DEFAULT_MAX_BYTES
        files = []
        for level in ("derive", "import", "graph", "exe", "kernels"):
            for p in (self.root / level).glob("*"):
                try:
                    st = p.stat()
                except OSError:
                    continue
                files.append((st.st_mtime, st.st_size, p))
        total, freed = sum(f[1] for f in files), 0
        for _, size, p in sorted(files):
            if total - freed <= max_bytes:
                break
            p.unlink(missing_ok=True)
            freed += size
        return freed


def _stat(st: os.stat_result) -> list[int]:
    """What identifies a file's content by stat, as ccache's direct mode: its size, inode
    and device, and both times in ns - the ctime too, which no one can set back (a file
    rewritten in place with the same size and its mtime restored has a new ctime)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def stable_stat(path: str) -> list[int] | None:
    """`_stat` of a file that may be remembered by it: None when it cannot be read, or
    changed within the last `stable_seconds` (a file written now may change again within
    its times' resolution)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return None if time.time() - max(st.st_mtime, st.st_ctime) < stable_seconds() else _stat(st)


def stable_seconds() -> float:
    """STABLE_SECONDS, or `NPU_CACHE_STABLE_SECONDS` (tests set 0: their files are new)."""
    try:
        return float(os.environ.get(STABLE_ENV) or STABLE_SECONDS)
    except ValueError:
        return STABLE_SECONDS


# ----------------------------------------------------------------------------- checking an image



def check_image(data: Any) -> None:
    """The executable image's size, section table and section crc32s hold
    (`runtime.executable` checks the rest when it loads it); raises CacheCorrupt."""
    from runtime.image import HEADER, MAGIC, SECTION
    if len(data) < HEADER.size:
        raise CacheCorrupt("shorter than an executable header")
    magic, _, header_size, file_size, count, table_crc, *_ = HEADER.unpack_from(data)
    if magic != MAGIC or file_size != len(data):
        raise CacheCorrupt("bad magic or size: truncated or not an executable")
    with memoryview(data) as view:  # (released before the caller closes a mapped file)
        with view[header_size:header_size + count * SECTION.size] as table:
            if len(table) != count * SECTION.size or zlib.crc32(table) != table_crc:
                raise CacheCorrupt("section table crc32 mismatch")
            sections = [SECTION.unpack_from(table, i * SECTION.size) for i in range(count)]
        for i, (_, _, offset, size, crc, _) in enumerate(sections):
            with view[offset:offset + size] as section:
                if offset + size > len(data) or zlib.crc32(section) != crc:
                    raise CacheCorrupt(f"section {i} crc32 mismatch")


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _weight_bytes(index: Mapping[str, Any]) -> int:
    """The bytes of the weights an executable's index lists (from the index: a freshly
    packaged executable's section is not assembled for a summary)."""
    from npu_dialects.dtypes import ELEMENT_TYPES
    total = 0
    for entry in index.values():
        n = ELEMENT_TYPES[entry["dtype"]][2].itemsize
        for d in entry["shape"]:
            n *= d
        total += n
    return total


def model_line(source: Mapping[str, Any]) -> str:
    """The summary's line naming the model (path, sha256)."""
    sha = f" (sha256 {source['sha256'][:12]}...)" if source.get("sha256") else ""
    return f"model:     {source.get('path') or '(in memory)'}{sha}"


def sections_line(chunks: list) -> str:
    """The summary's line of section sizes, from an image's chunks (`runtime.image._layout`)."""
    from runtime.image import section_spans
    from tools.cli import fmt_bytes
    spans = section_spans(b"".join(chunks[:2]))  # (the header and the section table)
    return "sections:  " + ", ".join(f"{name} {fmt_bytes(size)}" for name, (_, size) in spans.items()
                                     if name not in ("header", "section table"))


def summary_lines(exe, chunks: list) -> list[str]:
    """What an executable (its `chunks`) holds, for the summary (the compile cache keeps them)."""
    from tools.cli import fmt_bytes

    meta = exe.meta
    d = exe.descriptors
    slots = {s for t in d for s in t.waits + t.signals}
    mem = meta.get("memory") or {}
    lines = [model_line(meta.get("source") or {}),
             f"arch:      {exe.arch.spec()}",
             f"pipeline:  {meta.get('pipeline') or '(task-level input, packaged as is)'}",
             f"tasks:     {len(d)} on {len({t.core for t in d})} of {exe.arch.cores} cores, "
             f"{_count(len(meta['kernels']), 'kernel')}, {_count(len(slots), 'event slot')}",
             f"weights:   {fmt_bytes(_weight_bytes(meta['weights']))} in {_count(len(meta['weights']), 'tensor')}",
             f"arena:     {fmt_bytes(mem.get('arena_bytes') or 0)} of DRAM activations",
             sections_line(chunks)]
    if meta.get("bucket"):
        lines.insert(2, "bucket:    " + ", ".join(f"{k}={v}" for k, v in meta["bucket"].items()))
    return lines
