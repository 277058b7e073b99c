"""Level 0 of the compile cache: a model compiled before, with other weight values.

A compile that builds an executable records how each of its weights follows from the
model's initializers (`derivation`): an initializer as it is, a recipe over
initializers (`npu_dialects.recipe`: folded BatchNorms, merged projections, scaled
projections, packed layer groups), or a weight that only initializers read by value
decide. The initializers the compile read by value are the record's *value set*: the
importer's non-direct ones, those a pass read (`npu_dialects.weights.ReadLog`), those
a derived weight written inline in the IR came from, and the sources of a recipe
that reads a weight without one. A later model with the same structure (bucket,
pipeline, arch) whose value-set initializers hold the same data compiles by
rebuilding the weights whose initializers changed and rewriting the recorded
executable's image around them (`reweigh`): no import, no pass, no program decoded.
The result is byte for byte what a compile would write (tests/test_compile_cache.py).

Algorithm
---------
The record (`derive/<key>.json`, key: structure digest, bucket, pipeline, arch) holds
the level 3 key of its executable, the value set's tensor digests, every other
initializer's digest it depends on, and per weight of the executable's index its
spec: `{"init": name}`, `{"expr": recipe}` (store keys resolved through the recorded
direct sources and recipes) or `{"keep": true}`. `reweigh` compares digests, evaluates
the specs of the weights with a changed initializer, converts each to its index
element type (floats only: an integer weight is left to a compile) and streams the
image: new meta (its `source`), the old program and command buffer, the old weights
section with the rebuilt weights in place (`runtime.image`: checksums recomputed).
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import ml_dtypes  # noqa: F401 (np.dtype("bfloat16"))
import numpy as np

Spec = dict[str, Any]


def derivation(sources: Mapping[str, str], import_read: Iterable[str], reads: Iterable[str],
               recipes: Mapping[str, dict], final: Iterable[str], fixed: Iterable[str] = (),
               uniform: Mapping[str, float | None] | None = None,
               sizes: Mapping[str, int] | None = None,
               views: Mapping[str, Sequence[int]] | None = None) -> dict[str, Any]:
    """How the weights `final` follow from initializers: {"value": initializer names read
    by value, "weights": key -> spec, "sources": store key -> initializer, "recipes":
    store key -> recipe} (`sources`: the importer's direct weights; `import_read`: the
    initializers it read otherwise; `reads`: store keys passes read by value; `fixed`:
    weights to keep as they are, their initializers in the value set; `uniform`: store
    keys passes tested for one value in every element, with the answer, kept as
    "uniform": initializer -> answer when the key is one, else in the value set;
    `sizes`: store key -> elements, for a pack's parts of unknown origin; `views`: store
    key -> shape, for a source that is its initializer's data in another shape, kept
    as "shapes")."""
    from npu_dialects.recipe import leaves

    memo: dict[str, set[str] | None] = {}

    def inits(key: str) -> set[str] | None:
        """The initializers a store key is computed from (None: not known, a weight a
        pass made without a recipe)."""
        if key not in memo:
            memo[key] = None  # (a cycle is not known either)
            if key in sources:
                memo[key] = {sources[key]}
            elif key in recipes:
                parts = [inits(k) for k in leaves([recipes[key]])]
                memo[key] = None if any(p is None for p in parts) else set().union(*parts)  # type: ignore[arg-type]
        return memo[key]

    value, weights, used, fixed = set(import_read), {}, set(), set(fixed)
    for k in reads:
        value |= inits(k) or set()
    tests = {}
    for k, answer in (uniform or {}).items():
        if k in sources:
            tests[sources[k]] = answer
        else:
            value |= inits(k) or _known_sources(k, sources, recipes)
    for k in final:
        if k in fixed:
            weights[k] = {"keep": True}
            value |= _known_sources(k, sources, recipes)
        elif k in sources:
            weights[k] = {"init": sources[k]}
        elif k in recipes and inits(k) is not None:
            weights[k] = {"expr": recipes[k]}
            used |= _closure(k, recipes)
        elif k in recipes and (found := _with_old_parts(recipes[k], inits, sizes)) is not None:
            expr, unknown = found
            weights[k] = {"expr": expr}  # (a pack whose unknown parts are copied from its old value)
            for leaf in leaves([expr]) - {OLD}:
                used |= _closure(leaf, recipes)
            for part in unknown:  # (what is known of their sources: fixed)
                value |= _known_sources(part, sources, recipes)
        else:  # (its value follows from what was read; a recipe's known sources must stay as they were)
            weights[k] = {"keep": True}
            value |= _known_sources(k, sources, recipes)
    return {"value": sorted(value), "weights": weights, "uniform": tests,
            "sources": {k: sources[k] for k in used if k in sources},
            "shapes": {k: list(shape) for k, shape in (views or {}).items() if k in used and k in sources},
            "recipes": {k: recipes[k] for k in used if k in recipes}}


OLD = "\0old"
"""The leaf of a recipe that reads the weight's own value in the recorded executable."""


def _with_old_parts(expr: dict, inits: Callable[[str], set[str] | None],
                    sizes: Mapping[str, int] | None) -> tuple[dict, list[str]] | None:
    """A pack's recipe (`cast(place(...))`, as `add_weight` keeps a relayout) with each
    part of unknown origin read from the pack's old value (`OLD`), and those parts'
    keys; None for another recipe."""
    place = expr["args"][0] if expr.get("op") == "cast" and len(expr["args"]) == 1 else None
    if sizes is None or place is None or place.get("op") != "place":
        return None
    args, unknown = [], []
    for arg, offset in zip(place["args"], place["offsets"]):
        key = arg.get("w")
        if key is not None and inits(key) is None:
            if key not in sizes:
                return None
            arg = {"op": "flat_slice", "args": [{"w": OLD}], "start": offset, "stop": offset + sizes[key]}
            unknown.append(key)
        elif "w" not in arg and "c" not in arg:
            return None
        args.append(arg)
    return {**expr, "args": [{**place, "args": args}]}, unknown


def _closure(key: str, recipes: Mapping[str, dict]) -> set[str]:
    """`key` and every store key its recipe reads, transitively."""
    from npu_dialects.recipe import leaves
    out, stack = set(), [key]
    while stack:
        k = stack.pop()
        if k not in out:
            out.add(k)
            stack += leaves([recipes[k]]) if k in recipes else []
    return out


def _known_sources(key: str, sources: Mapping[str, str], recipes: Mapping[str, dict]) -> set[str]:
    return {sources[k] for k in _closure(key, recipes) if k in sources}


def spec_inits(spec: Spec, record: Mapping[str, Any]) -> set[str]:
    """The initializers a weight's spec reads."""
    if "init" in spec:
        return {spec["init"]}
    if "expr" in spec:
        from npu_dialects.recipe import leaves
        keys = set().union(*(_closure(k, record["recipes"]) for k in leaves([spec["expr"]])))
        return {record["sources"][k] for k in keys if k in record["sources"]}
    return set()


def make_record(exe_key: str, deriv: Mapping[str, Any], tensors: Mapping[str, str],
                index: Mapping[str, Any]) -> dict[str, Any]:
    """The level 0 record of an executable (`exe_key`: its level 3 key, `index`: its
    weights index) and a derivation, with the tensor digests (`ModelDigests.tensors`)
    it depends on and each weight's numpy dtype (read without the compiler)."""
    from npu_dialects.dtypes import ELEMENT_TYPES
    depends = set(deriv["value"]) | set(deriv["sources"].values()) | set(deriv["uniform"]) | {
        s["init"] for s in deriv["weights"].values() if "init" in s}
    return {"exe": exe_key, **deriv, "tensors": {n: tensors[n] for n in sorted(depends) if n in tensors},
            "dtypes": {k: str(ELEMENT_TYPES[e["dtype"]][2]) for k, e in index.items()}}


def changed_weights(record: Mapping[str, Any], tensors: Mapping[str, str]) -> list[str] | None:
    """The weights of the record to rebuild for a model with tensor digests `tensors`;
    None when a value-set initializer changed (or went): the record does not apply."""
    old = record["tensors"]
    if any(tensors.get(n) != old.get(n) for n in record["value"] if n in old):
        return None
    if any(n not in tensors for n in old):
        return None
    changed = {n for n, d in old.items() if tensors[n] != d}
    return [k for k, s in record["weights"].items() if spec_inits(s, record) & changed]


def tests_hold(record: Mapping[str, Any], tensors: Mapping[str, str],
               initializer: Callable[[str], np.ndarray]) -> bool:
    """Whether every changed initializer a pass tested for a uniform value gives the
    same answer (`npu_dialects.weights.test_uniform`)."""
    from npu_dialects.recipe import uniform_value
    old = record["tensors"]
    return all(uniform_value(initializer(n)) == answer for n, answer in record["uniform"].items()
               if tensors.get(n) != old.get(n))


def rebuild(spec: Spec, record: Mapping[str, Any], initializer: Callable[[str], np.ndarray],
            old: Callable[[], np.ndarray] | None = None) -> np.ndarray:
    """A weight computed again from the model's initializers (`old`: its value in the
    recorded executable, for the parts of a pack of unknown origin)."""
    from npu_dialects.recipe import evaluate
    if "init" in spec:
        return initializer(spec["init"])
    memo: dict[str, np.ndarray] = {}

    views = record.get("shapes", {})  # (a source in another shape than its initializer's)

    def read(key: str) -> np.ndarray:
        if key == OLD and old is not None:
            return old()
        if key not in memo:
            if key in record["sources"]:
                data = initializer(record["sources"][key])
                memo[key] = data.reshape(views[key]) if key in views else data
            else:
                memo[key] = evaluate(record["recipes"][key], read)
        return memo[key]
    return evaluate(spec["expr"], read)


def patched_plan(image: Any, rebuilt: Mapping[str, np.ndarray], source: Mapping[str, Any],
                 dtypes: Mapping[str, Any]) -> Any:
    """The layout (`runtime.image.Layout`) of `image` (an executable's bytes) with the
    weights `rebuilt` in place (converted to their `dtypes`) and `source` in its
    metadata. The old image's table, program and command buffer crc32s are checked and
    its weights section's too, span by span in one pass: the new section's crc32 is
    combined from the unchanged spans' and the rebuilt weights' (`crc32_combine`).
    Raises CacheCorrupt."""
    import zlib

    from runtime.image import CMDBUF, META, PROGRAM, WEIGHTS, WeightPieces, plan_layout
    from tools.compile_cache import CacheCorrupt

    compiler, arch_text, spans = _sections(image)
    view = memoryview(image)
    old = {k: bytes(view[o:o + n]) if k == META else view[o:o + n] for k, (o, n, _) in spans.items()}
    for kind in (META, PROGRAM, CMDBUF):
        if zlib.crc32(old[kind]) != spans[kind][2]:
            raise CacheCorrupt(f"section {kind} crc32 mismatch")
    meta = json.loads(bytes(old[META]))
    meta["source"] = dict(source)
    patches = []
    for key, data in rebuilt.items():
        entry = meta["weights"][key]
        arr = np.ascontiguousarray(np.asarray(data).astype(dtypes[key], copy=False))
        patches.append((entry["offset"], arr.reshape(-1).view(np.uint8)))
    section = np.frombuffer(image, np.uint8, spans[WEIGHTS][1], spans[WEIGHTS][0])
    pieces, crc = _patched_section(section, sorted(patches, key=lambda p: p[0]), spans[WEIGHTS][2])
    sections = [(META, json.dumps(meta, separators=(",", ":")).encode()), (PROGRAM, old[PROGRAM]),
                (CMDBUF, old[CMDBUF]), (WEIGHTS, WeightPieces(len(section), pieces))]
    align = int(dict(p.split("=", 1) for p in arch_text.split(","))["align"])
    return plan_layout(compiler, arch_text, sections, align,
                       crcs={1: spans[PROGRAM][2], 2: spans[CMDBUF][2], 3: crc})


def _sections(image: Any) -> tuple[str, str, dict[int, tuple[int, int, int]]]:
    """(compiler, arch text, kind -> (offset, size, crc32)) of an image whose table's crc32 holds."""
    import zlib

    from runtime.image import HEADER, MAGIC, SECTION
    from tools.compile_cache import CacheCorrupt
    magic, _, header_size, size, count, table_crc, _, _, clen, alen = HEADER.unpack_from(image)
    table = bytes(image[header_size:header_size + count * SECTION.size])
    if magic != MAGIC or size != len(image) or zlib.crc32(table) != table_crc:
        raise CacheCorrupt("bad magic, size or section table")
    names = bytes(image[HEADER.size:HEADER.size + clen + alen])
    spans = {}
    for i in range(count):
        kind, _, offset, n, crc, _ = SECTION.unpack_from(table, i * SECTION.size)
        spans[kind] = (offset, n, crc)
    return names[:clen].decode(), names[clen:].decode(), spans


def _patched_section(section: np.ndarray, patches: list[tuple[int, np.ndarray]],
                     stored: int) -> tuple[list[tuple[int, np.ndarray]], int]:
    """The pieces of the old weights `section` with `patches` (offset, bytes) in place,
    and their crc32; raises CacheCorrupt when the old section's crc32 is not `stored`."""
    import zlib

    from runtime.image import crc32_combine
    from tools.compile_cache import CacheCorrupt
    pieces, at, old_crc, new_crc = [], 0, 0, 0
    for offset, data in [*patches, (len(section), None)]:
        if offset > at:  # (an unchanged span: read once, for both checksums)
            span = section[at:offset]
            c = zlib.crc32(span.data)
            old_crc, new_crc = crc32_combine(old_crc, c, span.size), crc32_combine(new_crc, c, span.size)
            pieces.append((at, span))
        if data is None:
            break
        replaced = section[offset:offset + data.size]
        old_crc = crc32_combine(old_crc, zlib.crc32(replaced.data), replaced.size)
        new_crc = crc32_combine(new_crc, zlib.crc32(data.data), data.size)
        pieces.append((offset, data))
        at = offset + data.size
    if old_crc != stored:
        raise CacheCorrupt("weights section crc32 mismatch")
    return pieces, new_crc


def integer_weights(record: Mapping[str, Any], keys: Iterable[str]) -> bool:
    """Whether a weight to rebuild is of an integer type (left to a compile: converting
    it has range checks `sim.memory.host_values` makes)."""
    return any(np.dtype(record["dtypes"][k]).kind in "iu" for k in keys)


def open_image(path: Any) -> tuple[Any, mmap.mmap] | None:
    """(file, its read-only mapping) of a cached image, or None."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    try:
        return f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        f.close()
        return None


def reweigh_file(cache: Any, path: str, arch_key: str, pipeline: str | None, out: str) -> list[str] | None:
    """Level 0 for `npu-compile MODEL.onnx`: the executable written to `out` from a
    record of the model's structure, and its summary lines; None when there is no
    record, it does not apply, or anything about the model or the entry is off (the
    compile that follows diagnoses the model)."""
    from concurrent.futures import ThreadPoolExecutor

    from tools.compile_cache import derive_key, derived_key, fast_hit, model_digests, pipeline_key, source_of
    first = arch_key.split(",", 1)[0].strip()
    if pipeline is not None or first.endswith(".toml") or "/" in first:
        return None
    try:
        from lowering.importer.onnx_file import initializer_array, read_model
        with ThreadPoolExecutor(1) as pool:  # (the file's sha256 beside the tensors' digests: two cores)
            sha = pool.submit(source_of, path)
            model = read_model(path)
            digests = cache.file_digests(path) or model_digests(model)
            source = sha.result()
    except Exception:  # noqa: BLE001 (any problem with the model: the compile reports it)
        return None
    cache.remember(path, digests, source["sha256"])
    digests.file_sha256 = source["sha256"]
    hit = fast_hit(cache, path, arch_key, pipeline, out, digests)  # (a file not remembered by stat: a hit all the same)
    if hit is not None and isinstance(hit.get("summary"), list):
        return hit["summary"]
    k0 = derive_key(digests, None, pipeline_key(None), arch_key)
    record = cache.read_json("derive", k0)
    keys = changed_weights(record, digests.tensors) if isinstance(record, dict) else None
    summary = (cache.read_record(record["exe"]) or {}).get("summary") if keys is not None else None
    opened = open_image(cache.path("exe", record["exe"], ".npuexe")) if isinstance(summary, list) else None
    if opened is None or keys is None or not isinstance(summary, list):
        return None
    inits = {i.name: i for i in model.graph.initializer}
    f, image = opened
    with f:
        from runtime.image import write_layout
        from tools.compile_cache import CacheCorrupt
        try:
            index = json.loads(_meta_bytes(image))["weights"]
            if integer_weights(record, keys) or \
                    not tests_hold(record, digests.tensors, lambda n: initializer_array(inits[n])):
                return None
            dtypes = {k: np.dtype(d) for k, d in record["dtypes"].items()}
            rebuilt = {k: rebuild(record["weights"][k], record, lambda n: initializer_array(inits[n]),
                                  old=lambda k=k: _old_weight(image, index[k], dtypes[k])) for k in keys}
            plan = patched_plan(image, rebuilt, source, dtypes)
        except CacheCorrupt as e:
            cache.corrupt(cache.path("exe", record["exe"], ".npuexe"), str(e))
            cache.path("exe", record["exe"], ".json").unlink(missing_ok=True)
            return None
        except (KeyError, ValueError, TypeError, IndexError) as e:  # (a record this compiler cannot apply)
            cache.warn(f"compile cache: level 0 record of '{path}' does not apply ({type(e).__name__}: {e}); "
                       "compiling")
            return None
        chunks = write_layout(out, plan)
        lines = _restamped(summary, source, chunks)
        del chunks  # (views of the mapping: it closes with the last)
    cache.note("weights", f"{len(keys)} of {len(record['weights'])} rebuilt, program reused")
    cache.link_exe(derived_key(k0, digests.weights), out, {"weights": digests.weights, "source": source,
                                                          "summary": lines})
    return lines


def _old_weight(image: Any, entry: Mapping[str, Any], dtype: Any) -> np.ndarray:
    """A weight's value in an executable image, by its index entry (flat)."""
    from runtime.image import WEIGHTS
    offset = _sections(image)[2][WEIGHTS][0]
    return np.frombuffer(image, dtype, int(np.prod(entry["shape"], dtype=np.int64)), offset + entry["offset"])


def _meta_bytes(image: Any) -> bytes:
    from runtime.image import HEADER, META, SECTION
    header_size, count = HEADER.unpack_from(image)[2], HEADER.unpack_from(image)[4]
    for i in range(count):
        kind, _, offset, size, _, _ = SECTION.unpack_from(image, header_size + i * SECTION.size)
        if kind == META:
            return bytes(image[offset:offset + size])
    raise ValueError("no meta section")


def _restamped(summary: list[str], source: Mapping[str, Any], chunks: list) -> list[str]:
    """The recorded summary with this model's line and the sections' sizes."""
    from tools.compile_cache import model_line, sections_line
    return [model_line(source) if ln.startswith("model:") else sections_line(chunks) if ln.startswith("sections:")
            else ln for ln in summary]
