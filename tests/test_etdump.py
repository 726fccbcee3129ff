"""ETDump output (Profile.to_etdump, etnp bench --etdump, the executorch.runtime drop-in's ETDump) and
intermediate outputs (profile(intermediate_outputs=...), the ETDump debug buffer). The files are read
back with this package's reader; tools/check_etdump_inspector.py checks them with ExecuTorch's Inspector."""
import struct

import numpy as np
import pytest

from conftest import method_inputs, method_outputs, model_path, reference
from executorch_numpy_runtime import ExecuTorchError, Runtime
from executorch_numpy_runtime import executorch_runtime as et
from executorch_numpy_runtime._flatbuffers import Reader, Table, finish
from executorch_numpy_runtime.cli import main
from executorch_numpy_runtime.etdump import UNSET_CHAIN_ULONG, op_event_name, read_etdump


def _method(name):
    return Runtime.get().load_program(model_path(name)).load_method()


def _read(path, debug_path=None):
    data = open(path, "rb").read()
    assert struct.unpack_from("<I", data)[0] == len(data) - 4 and data[8:12] == b"ED00"  # size-prefixed
    debug = open(debug_path, "rb").read() if debug_path else None
    return read_etdump(data, debug)


def _profile_events(run):
    return [e for e in run.events if e["kind"] == "profile_event"]


def test_flatbuffer_round_trip():
    inner = Table({0: ("q", -5), 1: ("str", "hé"), 2: ("[q", [1, 2, 3])})
    root = Table({0: ("I", 7), 1: ("tables", [inner, Table({})]), 2: ("bytes", b"\x01\x02"), 3: ("d", 2.5),
                  5: ("?", True), 6: ("str", None)})
    for prefixed in (False, True):
        data = finish(root, b"TEST", size_prefixed=prefixed)
        r = Reader(data, size_prefixed=prefixed)
        assert r.identifier() == b"TEST"
        t = r.root()
        assert r.scalar(t, 0, "I") == 7 and r.scalar(t, 3, "d") == 2.5 and r.scalar(t, 5, "?") is True
        assert r.scalar(t, 4, "i", -1) == -1 and r.string(t, 6) is None and r.vector(t, 2, "B") == [1, 2]
        a, b = r.tables(t, 1)
        assert r.scalar(a, 0, "q") == -5 and r.string(a, 1) == "hé" and r.vector(a, 2, "q") == [1, 2, 3]
        assert r.scalar(b, 0, "q", 9) == 9
        assert len(data) % 8 == 0


def test_portable_program_etdump(tmp_path):
    m = _method("small_cnn")
    ref = reference("small_cnn")
    prof = m.profile(method_inputs(ref, "forward"), repeat=3)
    path = tmp_path / "p.etdp"
    prof.to_etdump(path)
    version, runs = _read(path)
    assert version == 0 and len(runs) == 3
    kernels = [e for e in prof.events if e.depth == 0]
    for run, events in zip(runs, prof.calls):
        assert run.bundled_input_index == -1 and run.name
        pe = _profile_events(run)
        ops = [e for e in pe if e["name"].startswith("native_call_")]
        calls = [e for e in pe if e["name"] == "OPERATOR_CALL"]
        assert len(ops) == len(calls) == len([e for e in events if e.depth == 0])
        assert [e["name"] for e in ops] == [op_event_name(e.name) for e in kernels]
        # the program's instruction indices (one chain): what an ETRecord's debug handle map is keyed by
        assert [e["instruction_id"] for e in ops] == [e.instruction for e in kernels]
        assert all(e["chain_index"] == 0 and e["delegate_debug_id_int"] == -1 for e in ops)
        assert all(e["end_time"] >= e["start_time"] > 0 for e in pe)
        assert sum(e["end_time"] - e["start_time"] for e in ops) > 0
        (ex,) = [e for e in pe if e["name"] == "Method::execute"]
        assert ex["chain_index"] == -1 and all(ex["start_time"] <= e["start_time"] and e["end_time"] <= ex["end_time"]
                                               for e in ops)
    # runs follow one another
    spans = [[e for e in _profile_events(r) if e["name"] == "Method::execute"][0] for r in runs]
    assert all(a["end_time"] < b["start_time"] for a, b in zip(spans, spans[1:]))
    assert "native_call_convolution.out" in {e["name"] for e in _profile_events(runs[0])}


def test_xnnpack_program_etdump(tmp_path):
    m = _method("small_cnn_xnn")
    ref = reference("small_cnn_xnn")
    prof = m.profile(method_inputs(ref, "forward"))
    path = tmp_path / "x.etdp"
    prof.to_etdump(path)
    _, (run,) = _read(path)
    pe = _profile_events(run)
    delegates = [e for e in pe if e["name"] == "DELEGATE_CALL"]
    nodes = [e for e in pe if e["delegate_debug_id_str"]]
    want = [e for e in prof.events if e.depth == 1]
    assert delegates and len(nodes) == len(want) > 0
    assert [e["name"] for e in nodes] == [e.name for e in want]
    ids = [e["delegate_debug_id_str"] for e in nodes]
    assert len(set((e["instruction_id"], e["delegate_debug_id_str"]) for e in nodes)) == len(nodes)
    assert all(i.rsplit(" #", 1)[0] == e["name"] and int(i.rsplit(" #", 1)[1]) >= 1 for i, e in zip(ids, nodes))
    assert all(e["delegate_debug_metadata"] for e in nodes)  # the node's output shape
    for d in delegates:
        inside = [e for e in nodes if e["instruction_id"] == d["instruction_id"]]
        assert inside and all(d["start_time"] <= e["start_time"] and e["end_time"] <= d["end_time"] + 1
                              for e in inside)


def test_intermediate_outputs(tmp_path):
    m = _method("small_cnn")
    ref = reference("small_cnn")
    prof = m.profile(method_inputs(ref, "forward"), repeat=2, intermediate_outputs=True)
    kernels = [e.instruction for e in prof.events if e.depth == 0]
    vals = prof.debug_values
    # one value per kernel, a tensor list's (max_pool2d_with_indices: out and indices; batch norm's
    # three) item by item
    assert sorted({v.instruction for v in vals}) == kernels and len(prof.debug_calls) == 2
    assert [v.item for v in vals if v.instruction == vals[-1].instruction] == [0]
    assert any(v.item == 1 and v.dtype == 4 for v in vals)  # max_pool2d's int64 indices
    # the last instruction's output is the method's output
    np.testing.assert_array_equal(vals[-1].value, prof.outputs[0])
    np.testing.assert_allclose(vals[-1].value, method_outputs(ref, "forward")[0], rtol=1e-4, atol=1e-5)
    assert all(isinstance(v.value, np.ndarray) for v in vals)
    names = {e.instruction: e.name for e in prof.events}
    relus = [v for v in vals if "relu" in names[v.instruction]]
    assert relus and all((v.value >= 0).all() for v in relus)
    # chosen instructions only
    pick = [kernels[0], kernels[-1]]
    p2 = m.profile(method_inputs(ref, "forward"), intermediate_outputs=pick)
    assert [v.instruction for v in p2.debug_values] == pick
    np.testing.assert_array_equal(p2.debug_values[0].value, vals[0].value)
    # off by default, and the next profile forgets the choice
    assert m.profile(method_inputs(ref, "forward")).debug_values == []
    with pytest.raises(ExecuTorchError):
        m.profile(method_inputs(ref, "forward"), intermediate_outputs=[10_000])
    with pytest.raises(TypeError):
        m.profile(method_inputs(ref, "forward"), intermediate_outputs=3)
    # the debug buffer: one debug event per captured value plus the method outputs
    path, dbg = tmp_path / "d.etdp", tmp_path / "d.bin"
    prof.to_etdump(path, dbg)
    _, runs = _read(path, dbg)
    debug = [e for e in runs[-1].events if e["kind"] == "debug_event"]
    inter = [e for e in debug if not e["debug_entry"]["output"]]
    outs = [e for e in debug if e["debug_entry"]["output"]]
    assert [e["instruction_id"] for e in inter] == [v.instruction for v in vals]  # one event per output
    for e, v in zip(inter, vals):
        t = e["debug_entry"]["tensor"]
        assert e["debug_entry"]["val"] == "Tensor" and t["offset"] % 64 == 0
        np.testing.assert_array_equal(t["data"], v.value)
    assert len(outs) == 1 and outs[0]["chain_index"] == UNSET_CHAIN_ULONG
    np.testing.assert_array_equal(outs[0]["debug_entry"]["tensor"]["data"], prof.outputs[0])
    # without a debug buffer: no debug events
    prof.to_etdump(path)
    assert not [e for r in _read(path)[1] for e in r.events if e["kind"] == "debug_event"]


def test_intermediate_outputs_xnnpack_delegate():
    m = _method("mlp_xnn")
    ref = reference("mlp_xnn")
    prof = m.profile(method_inputs(ref, "forward"), intermediate_outputs=True)
    delegate = [e.instruction for e in prof.events if e.depth == 0 and e.name == "XnnpackBackend"]
    assert delegate and delegate[-1] in [v.instruction for v in prof.debug_values]
    # a delegate call's arguments, as ExecuTorch logs them: its inputs, then its outputs
    args = [v for v in prof.debug_values if v.instruction == delegate[-1]]
    assert [v.item for v in args] == list(range(len(args))) and len(args) >= 2
    np.testing.assert_array_equal(args[-1].value, prof.outputs[-1])
    if len(delegate) == 1:
        np.testing.assert_array_equal(args[0].value, method_inputs(ref, "forward")[0])


def test_bench_etdump(tmp_path, capsys):
    path, dbg = tmp_path / "b.etdp", tmp_path / "b.bin"
    assert main(["bench", model_path("mlp_xnn"), "--iters", "2", "--warmup", "0", "--etdump", str(path),
                 "--debug-buffer", str(dbg)]) == 0
    assert f"ETDump: {path} (2 runs)" in capsys.readouterr().out
    _, runs = _read(path, dbg)
    assert len(runs) == 2
    names = {e["name"] for e in _profile_events(runs[0])}
    assert {"DELEGATE_CALL", "Method::execute"} <= names
    assert any(e["delegate_debug_id_str"] for e in _profile_events(runs[0]))
    assert [e for e in runs[0].events if e["kind"] == "debug_event"]
    assert main(["bench", model_path("mlp"), "--iters", "1", "--debug-buffer", str(dbg)]) == 2


def test_drop_in_etdump(tmp_path):
    rt = et.Runtime.get()
    ref = reference("small_cnn")
    ins = method_inputs(ref, "forward")
    prog = rt.load_program(model_path("small_cnn"), enable_etdump=True, debug_buffer_size=1 << 24)
    m = prog.load_method("forward")
    for _ in range(2):
        outs = m.execute(ins)
    np.testing.assert_allclose(outs[0], method_outputs(ref, "forward")[0], rtol=1e-4, atol=1e-5)
    path, dbg = tmp_path / "e.etdp", tmp_path / "e.bin"
    prog.write_etdump_result_to_file(str(path), str(dbg))
    _, runs = _read(path, dbg)
    assert len(runs) == 2
    outs_logged = [e for e in runs[1].events if e["kind"] == "debug_event" and e["debug_entry"]["output"]]
    np.testing.assert_array_equal(outs_logged[0]["debug_entry"]["tensor"]["data"], outs[0])
    # no debug buffer size: timings only, no debug buffer file
    prog2 = rt.load_program(model_path("small_cnn"), enable_etdump=True)
    prog2.load_method("forward").execute(ins)
    dbg2 = tmp_path / "none.bin"
    prog2.write_etdump_result_to_file(str(path), str(dbg2))
    _, (run,) = _read(path)
    assert not dbg2.exists() and not [e for e in run.events if e["kind"] == "debug_event"]
    # a full debug buffer: later calls record timings only
    prog3 = rt.load_program(model_path("small_cnn"), enable_etdump=True, debug_buffer_size=64)
    m3 = prog3.load_method("forward")
    with pytest.warns(RuntimeWarning):
        m3.execute(ins)
    m3.execute(ins)
    prog3.write_etdump_result_to_file(str(path), str(dbg))
    _, runs = _read(path, dbg)
    assert [bool([e for e in r.events if e["kind"] == "debug_event"]) for r in runs] == [True, False]
    # without enable_etdump
    with pytest.raises(RuntimeError):
        rt.load_program(model_path("small_cnn")).write_etdump_result_to_file(str(path), str(dbg))
