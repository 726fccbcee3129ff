"""method.profile(): per-instruction events, per-node events inside XNNPACK delegates, Chrome traces."""
import json

import numpy as np
import pytest

from conftest import method_inputs, method_outputs, model_path, reference
from executorch_numpy_runtime import Runtime
from executorch_numpy_runtime._native import lib


def _method(name):
    return Runtime.get().load_program(model_path(name)).load_method()


def test_portable_kernels_profiled(tmp_path):
    m = _method("small_cnn")
    ref = reference("small_cnn")
    prof = m.profile(method_inputs(ref, "forward"), repeat=2)
    np.testing.assert_allclose(prof.outputs[0], method_outputs(ref, "forward")[0], rtol=1e-4, atol=1e-5)
    assert len(prof.calls) == 2 and prof.events is prof.calls[-1]
    assert all(e.depth == 0 and e.node == -1 for e in prof.events)
    names = {e.name for e in prof.events}
    assert "aten::convolution.out" in names
    assert set(prof.events[0].__dict__) >= {"name", "start_us", "duration_us", "instruction"}
    starts = [e.start_us for e in prof.events]
    assert starts == sorted(starts) and all(e.duration_us >= 0 for e in prof.events)
    assert [e.instruction for e in prof.events] == sorted(e.instruction for e in prof.events)
    assert 0 < prof.total_us <= prof.wall_us * 1.5
    rows = prof.operators()
    assert rows[0][2] >= rows[-1][2] and sum(r[1] for r in rows) == len(prof.events)
    assert "aten::convolution.out" in prof.table(3)


def test_xnnpack_nodes_profiled(tmp_path):
    m = _method("mobilenet_v2_xnn")
    ref = reference("mobilenet_v2_xnn")
    prof = m.profile(method_inputs(ref, "forward"))
    top = [e for e in prof.events if e.depth == 0]
    nodes = [e for e in prof.events if e.depth == 1]
    assert [e.name for e in top if e.name == "XnnpackBackend"]
    assert len(nodes) > 10
    assert any("Conv2d" in e.name for e in nodes) and all(e.node >= 0 and e.shape for e in nodes)
    # every node lies inside its delegate call
    calls = {e.instruction: e for e in top}
    for e in nodes:
        c = calls[e.instruction]
        assert c.start_us <= e.start_us + 1e-3 and e.start_us + e.duration_us <= c.start_us + c.duration_us + 1e-3
    names = [r[0] for r in prof.operators()]
    assert any(n.startswith("XNN") for n in names[:3])
    assert any(n.endswith("(outside nodes)") for n in names)
    path = tmp_path / "trace.json"
    prof.to_chrome_trace(path)
    trace = json.load(open(path))["traceEvents"]
    complete = [e for e in trace if e["ph"] == "X"]
    assert len(complete) == len(prof.events)
    assert {e["cat"] for e in complete} == {"instruction", "xnnpack_node"}
    assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in complete)


def test_profiling_off_outside_profile():
    m = _method("mlp_xnn")
    ref = reference("mlp_xnn")
    ins = method_inputs(ref, "forward")
    m(ins)
    assert lib.etnp_method_num_profile_events(m._ptr) == 0
    m.profile(ins)
    m(ins)  # profiling was switched off again: no events are kept
    assert lib.etnp_method_num_profile_events(m._ptr) == 0
    with pytest.raises(ValueError):
        m.profile(ins, repeat=0)


def test_profile_with_named_feeds():
    m = _method("named_io")
    ref = reference("named_io")
    x, s = method_inputs(ref, "forward")
    prof = m.profile(input_0=x, scale=s)
    np.testing.assert_allclose(prof.outputs[1], method_outputs(ref, "forward")[1], rtol=1e-5, atol=1e-6)
