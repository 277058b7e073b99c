"""runtime.device: run modes, waves, wait styles, streams and events, the two event
levels, the watchdog (injected deadlock and hang), deferred release, device memory."""

from __future__ import annotations

import json
import logging
from typing import Any

import numpy as np
import pytest

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.graph import ints
from npu_dialects.task import TaskOp
from npu_dialects.weights import weights_of
from runtime.device import DeviceError, HostModel, Runtime
from runtime.run import random_inputs, run
from sim import signature
from tools.npu_run import main as npu_run_main
from tools.testkit.transformers import bert_layers


def _compile(model):
    m, w = import_model(model)
    compile_module(m, None, w, verify_each=False)
    return m, weights_of(m)


def _tasks(m) -> list[TaskOp]:
    """The module's tasks in program order (the device's numbering of tasks)."""
    return [op for op in m.walk() if isinstance(op, TaskOp)]


@pytest.fixture(scope="module")
def bert():
    """A small BERT layer: at least 8 tasks over 4 cores, events between them."""
    m, w = _compile(bert_layers(layers=1, seq=64, hidden=256, heads=4, ffn=1024))
    assert len(_tasks(m)) >= 8 and len({t.core.value.data for t in _tasks(m)}) == 4 \
        and any(ints(t.signals, ()) for t in _tasks(m))
    ins = random_inputs(signature(m), 1)
    return m, w, ins, run(m, w, ins)


@pytest.fixture(scope="module")
def small():
    m, w = _compile(bert_layers(layers=1, seq=64, hidden=128, heads=4, ffn=512))
    ins = random_inputs(signature(m), 2)
    return m, w, ins, run(m, w, ins)


def _same(outs, ref) -> bool:
    return outs is not None and set(outs) == set(ref.outputs) and \
        all(np.array_equal(outs[k], ref.outputs[k]) for k in outs)


def _rep(req) -> dict:
    assert req.report is not None
    return req.report


def _one(m, w, ins, **opts: Any):
    rt = Runtime(**opts)
    return rt.run(rt.load(m, w), ins), rt


def test_every_mode_and_wait_style_gives_bit_identical_outputs(bert):
    m, w, ins, ref = bert
    assert ref.report["tasks"] == len(_tasks(m))
    e2e = {}
    for mode, depth in (("strict-sync", None), ("graph-async", None), ("graph-async", 3), ("full-async", None)):
        for style in ("blocking", "polling", "callback"):
            req, _ = _one(m, w, ins, mode=mode, queue_depth=depth, wait=style)
            assert _same(req.outputs, ref), (mode, depth, style)
            e2e[mode, depth, style] = (_rep(req)["cycles"], _rep(req)["host"]["end_to_end_cycles"])
    for style in ("blocking", "polling", "callback"):
        strict, graph, waves = e2e["strict-sync", None, style], e2e["graph-async", None, style], \
            e2e["graph-async", 3, style]
        # graph-async runs exactly the simulator's schedule; waves and one task at a time are slower
        assert graph[0] == ref.report["cycles"] == e2e["full-async", None, style][0]
        assert strict[0] > waves[0] > graph[0]
        assert strict[1] > waves[1] > graph[1]


def test_host_overhead_follows_the_wait_style(bert):
    m, w, ins, ref = bert
    host = HostModel()
    rep = {s: _rep(_one(m, w, ins, wait=s)[0])["host"] for s in ("blocking", "polling", "callback")}
    submit = host.doorbell_cycles + len(_tasks(m)) * host.submit_cycles
    assert all(r["submit_cycles"] == submit and r["waves"] == 1 for r in rep.values())
    assert rep["blocking"]["notify_cycles"] == host.interrupt_cycles + host.wake_cycles
    assert rep["callback"]["notify_cycles"] == host.interrupt_cycles + host.callback_cycles
    # polling: the first poll at or after the end (grid from the wait's start), plus the read
    end = submit + ref.report["cycles"]
    seen = submit + -(-(end - submit) // host.poll_interval) * host.poll_interval + host.poll_cycles
    assert rep["polling"]["end_to_end_cycles"] == seen
    assert rep["blocking"]["end_to_end_cycles"] == submit + ref.report["cycles"] + rep["blocking"]["notify_cycles"]


def test_strict_sync_issues_one_task_per_wave(bert):
    m, w, ins, _ = bert
    req, _ = _one(m, w, ins, mode="strict-sync")
    assert _rep(req)["host"]["waves"] == len(_tasks(m)) and _rep(req)["host"]["queue_depth"] == 1
    recs = sorted(_rep(req)["kernels"], key=lambda k: k["start"])
    assert len(recs) >= 2


def test_streams_in_full_async_overlap_and_keep_outputs(bert, small):
    def makespan(mode):
        rt = Runtime(mode=mode)
        e1, e2 = rt.load(bert[0], bert[1]), rt.load(small[0], small[1])
        s1, s2 = rt.stream(), rt.stream()
        reqs = [rt.submit(e, ins, stream=s) for _ in range(2) for e, ins, s in ((e1, bert[2], s1), (e2, small[2], s2))]
        rt.synchronize()
        for r in reqs:
            assert _same(r.outputs, bert[3] if r.exe is e1 else small[3])
        return max(r.device_end or 0.0 for r in reqs), rt
    full, rt = makespan("full-async")
    graph, _ = makespan("graph-async")
    assert full <= graph
    assert rt.stats()["pending_requests"] == 0


def test_user_event_orders_streams(bert, small):
    rt = Runtime(mode="full-async")
    e1, e2 = rt.load(bert[0], bert[1]), rt.load(small[0], small[1])
    s1, s2 = rt.stream(), rt.stream()
    a = rt.submit(e1, bert[2], stream=s1)
    ev = rt.event()
    s1.record(ev)
    s2.wait_event(ev)
    b = rt.submit(e2, small[2], stream=s2)
    rt.synchronize()
    assert a.device_end is not None and b.first_release is not None
    assert rt.arch is not None and b.first_release >= a.device_end + rt.arch.sync_latency
    # without the event the second stream starts at once
    rt2 = Runtime(mode="full-async")
    f1, f2 = rt2.load(bert[0], bert[1]), rt2.load(small[0], small[1])
    a2 = rt2.submit(f1, bert[2], stream=rt2.stream())
    b2 = rt2.submit(f2, small[2], stream=rt2.stream())
    rt2.synchronize()
    assert b2.first_release is not None and a2.device_end is not None and b2.first_release < a2.device_end


def test_concurrent_graphs_get_disjoint_device_event_slots(bert, small):
    rt = Runtime(mode="full-async")
    e1, e2 = rt.load(bert[0], bert[1]), rt.load(small[0], small[1])
    a = rt.submit(e1, bert[2], stream=rt.stream())
    b = rt.submit(e1, bert[2], stream=rt.stream())
    c = rt.submit(e2, small[2], stream=rt.stream())
    assert e1.slots > 0 and a.slot_base == 0 and b.slot_base == e1.slots
    assert rt.arch is not None and c.slot_base is not None and c.slot_base + e2.slots <= rt.arch.event_slots
    rt.synchronize()
    assert rt.slot_ranges == []
    graph = Runtime()
    g1 = graph.load(bert[0], bert[1])
    r1, r2 = graph.submit(g1, bert[2]), graph.submit(g1, bert[2])
    graph.synchronize()
    assert r1.slot_base == r2.slot_base == 0  # one graph at a time reuses the range


def test_completion_event_pool_is_reused_and_its_exhaustion_is_an_error(small):
    m, w, ins, ref = small
    rt = Runtime(mode="full-async", host_events=2)
    exe = rt.load(m, w)
    first = [rt.submit(exe, ins), rt.submit(exe, ins)]
    with pytest.raises(DeviceError, match="completion event pool is exhausted: 2 requests"):
        rt.submit(exe, ins)
    first[0].wait()
    third = rt.submit(exe, ins)  # the waited request's slot went back to the pool
    rt.synchronize()
    assert all(_same(r.outputs, ref) for r in (*first, third))


def test_device_memory_returns_to_baseline_after_every_run(small):
    m, w, ins, _ = small
    rt = Runtime(mode="full-async")
    exe = rt.load(m, w)
    base = rt.stats()["in_use_bytes"]
    assert base >= exe.weights_bytes > 0
    s1, s2 = rt.stream(), rt.stream()
    for _ in range(5):
        a, b = rt.submit(exe, ins, stream=s1), rt.submit(exe, ins, stream=s2)
        assert rt.stats()["in_use_bytes"] > base
        a.wait()
        b.wait()
        assert rt.stats()["in_use_bytes"] == base
    st = rt.stats()
    assert st["allocations"] == st["frees"] + 1  # (the weights)
    rt.unload(exe)
    assert rt.stats()["in_use_bytes"] == 0


def test_free_of_a_buffer_in_use_is_deferred_to_its_last_task(bert, caplog):
    m, w, ins, ref = bert
    rt = Runtime()
    exe = rt.load(m, w)
    name, shape = signature(m).inputs[0]
    buf = rt.alloc(4 * int(np.prod(shape)), "hidden")
    rt.write(buf, ins[name])
    with caplog.at_level(logging.DEBUG, logger="npu.runtime"):
        req = rt.submit(exe, {**ins, name: buf})
        rt.free(buf)
        st = rt.stats()
        assert st["deferred"] == 1 and st["deferred_total"] == 1
        other = rt.alloc(buf.nbytes, "other")
        assert other.addr != buf.addr  # the deferred bytes are not handed out again
        req.wait()
    assert _same(req.outputs, ref)
    assert buf.released and rt.stats()["deferred"] == 0
    released = [r.getMessage() for r in caplog.records if r.getMessage().startswith("release hidden")]
    assert len(released) == 1 and f"0x{buf.addr:x}" in released[0] and f"{buf.nbytes} bytes" in released[0]
    assert "deferred; last task" in released[0] and "task #" in released[0]
    rt.free(other)
    with pytest.raises(DeviceError, match="double free"):
        rt.free(other)


def test_bound_output_buffer_receives_the_outputs(small):
    m, w, ins, ref = small
    rt = Runtime()
    exe = rt.load(m, w)
    (name, shape), = signature(m).outputs
    out = rt.alloc(4 * int(np.prod(shape)), "out")
    rt.submit(exe, ins, outputs={name: out}).wait()
    assert np.array_equal(rt.read(out, shape), ref.outputs[name])


def test_injected_hang_is_stopped_by_the_watchdog_with_a_dump(bert):
    m, w, ins, _ = bert
    rt = Runtime(watchdog_cycles=300_000)
    exe = rt.load(m, w)
    rt.inject_fault("hang", 3)
    with pytest.raises(DeviceError) as e:
        rt.run(exe, ins)
    msg, dump = str(e.value), e.value.details or ""
    assert msg.startswith("watchdog: ") and "budget --watchdog-cycles 300000" in msg
    assert "#3 " in dump and "running and never finishing (an injected hang)" in dump
    assert "done [" in dump and "waiting since cycle" in dump and "nodes: /layer.0/" in dump
    assert "first blocking task:" in dump and "(task #3," in dump.split("first blocking task:")[1]
    with pytest.raises(DeviceError, match="the device stopped earlier"):
        rt.submit(exe, ins)


def test_missing_signal_is_a_deadlock_naming_the_wait_cycle(bert):
    m, w, ins, _ = bert
    rt = Runtime()
    exe = rt.load(m, w)
    # (the first task that signals an event: another core's task waits for it)
    rt.inject_fault("drop-signal", next(i for i, t in enumerate(_tasks(m)) if ints(t.signals, ())))
    with pytest.raises(DeviceError) as e:
        rt.run(exe, ins)
    assert str(e.value).startswith("deadlock at cycle ")
    dump = e.value.details or ""
    assert "tasks:" in dump and "wait chain:" in dump
    assert "first task in the wait cycle:" in dump or "a missing signal" in dump


def test_watchdog_stops_a_wait_longer_than_its_budget(bert):
    m, w, ins, _ = bert
    with pytest.raises(DeviceError, match=r"^watchdog: .* (waited 500 cycles for event slot|ran 500 cycles)"):
        _one(m, w, ins, watchdog_cycles=500)


def test_bad_runtime_options():
    cases: list[tuple[dict[str, Any], str]] = [
        ({"mode": "eager"}, "unknown run mode 'eager'"), ({"wait": "spin"}, "unknown wait style"),
        ({"queue_depth": 0}, "queue depth must be at least 1"), ({"host_events": 0}, "needs at least 1 slot")]
    for kw, msg in cases:
        with pytest.raises(DeviceError, match=msg):
            Runtime(**kw)


def test_npu_run_modes_and_flags(tmp_path, capsys):
    path = "tests/models/lenet.onnx"
    rep = tmp_path / "r.json"
    assert npu_run_main([path, "--mode", "strict-sync", "--wait", "polling", "--report", str(rep)]) == 0
    out = capsys.readouterr().out
    assert "host:        strict-sync, polling wait:" in out and "end to end" in out
    host = json.loads(rep.read_text())["host"]
    assert host["mode"] == "strict-sync" and host["wait"] == "polling" and host["end_to_end_cycles"] > 0
    assert npu_run_main([path, "--queue-depth", "0"]) == 2
    assert "expected a positive integer" in capsys.readouterr().err
    assert npu_run_main([path, "--mode", "eager"]) == 2
    assert npu_run_main([path, "--watchdog-cycles", "-1"]) == 2


def test_an_executable_file_runs_bit_identically_in_every_mode(tmp_path, bert):
    from tools.api import compile as compile_model
    m, _, ins, _ = bert
    path = tmp_path / "bert.npuexe"
    compile_model(bert_layers(layers=1, seq=64, hidden=256, heads=4, ffn=1024)).save(path)
    outs, cycles = [], {}
    for mode in ("strict-sync", "graph-async", "full-async"):
        rt = Runtime(mode=mode)
        req = rt.run(rt.load(str(path)), ins)
        outs.append(req.outputs)
        cycles[mode] = _rep(req)["cycles"]
    assert all(o is not None and all(np.array_equal(o[k], outs[0][k]) for k in o) for o in outs)
    assert cycles["strict-sync"] > cycles["graph-async"] == cycles["full-async"] == run(m, bert[1], ins).report["cycles"]
    with pytest.raises(DeviceError, match="no such file|cannot read"):
        Runtime().load(str(tmp_path / "missing.npuexe"))


def test_polling_and_callbacks(small):
    m, w, ins, ref = small
    rt = Runtime()
    exe = rt.load(m, w)
    req = rt.submit(exe, ins)
    polls = 0
    while not rt.poll(req):
        polls += 1
    # each poll advances the host by poll_cycles; the request is seen at the first poll after its end
    assert polls >= _rep(req)["cycles"] // rt.host.poll_cycles - 1
    assert req.done and _same(req.outputs, ref) and rt.stats()["pending_requests"] == 0
    seen: list[int] = []
    cb = rt.submit(exe, ins)
    cb.on_complete(lambda r: seen.append(r.id))
    other = rt.submit(exe, ins)
    other.wait()  # the device passes cb's interrupt on the way: its callback runs, once
    assert seen == [cb.id] and cb.done and _rep(cb)["host"]["wait"] == "callback"
    cb.wait()
    assert seen == [cb.id]


def test_a_graph_waits_for_free_device_event_slots():
    from npu_dialects.arch import Arch
    arch = Arch(event_slots=6)
    m, w = import_model(bert_layers(layers=1, seq=64, hidden=256, heads=4, ffn=1024), arch)
    compile_module(m, arch, w, verify_each=False)
    ins = random_inputs(signature(m), 1)
    rt = Runtime(mode="full-async")
    exe = rt.load(m, weights_of(m))
    assert 3 < exe.slots <= 6
    a = rt.submit(exe, ins, stream=rt.stream())
    b = rt.submit(exe, ins, stream=rt.stream())  # no room for a second range: it starts when a frees it
    rt.synchronize()
    assert a.device_end is not None and b.first_release is not None and b.first_release >= a.device_end
    assert a.slot_base == b.slot_base == 0 and _same(a.outputs, run(m, weights_of(m), ins))
