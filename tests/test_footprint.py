"""Footprint (issue #32): program bytes that only fed packing are given back after method load and
read back (checked) when needed again; delegates share one set of activation buffers; a bound on
the RSS a loaded program costs, derived from its weight bytes."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import method_inputs, method_outputs, model_path, reference

BIG = "mobilenet_v2_xnn"  # 14 MB: one XNNPACK delegate whose blob is nearly all of the file
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pages are given back on Linux (madvise)")


def _run(m, name):
    return m(method_inputs(reference(name), "forward"))


@linux
@pytest.mark.parametrize("use_mmap", [False, True])
def test_packed_program_bytes_are_given_back_and_read_back(use_mmap):
    rt = en.Runtime(num_threads=1)
    path = model_path(BIG)
    prog = rt.load_program(path, mmap=use_mmap)
    m = prog.load_method("forward")
    size = os.path.getsize(path)
    stats = m.memory_stats()
    assert stats["program_bytes"] < size // 10, stats  # the blob is given back
    assert stats["packed_weights"] > size // 2, stats
    want = method_outputs(reference(BIG), "forward")[0]
    np.testing.assert_allclose(_run(m, BIG)[0], want, rtol=1e-4, atol=1e-4)
    # loading it again reads the blob back from the file
    m2 = prog.load_method("forward")
    np.testing.assert_array_equal(_run(m2, BIG)[0], _run(m, BIG)[0])
    assert m2.memory_stats()["program_bytes"] < size // 10


@linux
def test_released_bytes_of_a_changed_file_are_refused(tmp_path):
    path = str(tmp_path / "m.pte")
    shutil.copyfile(model_path(BIG), path)
    rt = en.Runtime(num_threads=1)
    prog = rt.load_program(path)
    m = prog.load_method("forward")
    out = _run(m, BIG)[0]
    with open(path, "r+b") as fh:  # same size, other bytes in the delegate's weights
        fh.seek(os.path.getsize(path) // 2)
        fh.write(b"\x55" * 4096)
    with pytest.raises(en.ProgramLoadError, match="changed since the program was loaded"):
        prog.load_method("forward")
    np.testing.assert_array_equal(_run(m, BIG)[0], out)  # the loaded method is unaffected
    os.remove(path)
    with pytest.raises(en.ProgramLoadError, match="changed since the program was loaded"):
        prog.load_method("forward")


def test_programs_from_bytes_keep_their_bytes(rt):
    with open(model_path(BIG), "rb") as fh:
        data = fh.read()
    prog = rt.load_program(data)
    m = prog.load_method("forward")
    assert m.memory_stats()["program_bytes"] >= len(data)
    m2 = prog.load_method("forward")
    np.testing.assert_array_equal(_run(m2, BIG)[0], _run(m, BIG)[0])


def test_pickled_program_round_trip_after_release(rt):
    import pickle
    prog = rt.load_program(model_path(BIG))
    m = prog.load_method("forward")
    m2 = pickle.loads(pickle.dumps(prog)).load_method("forward")
    np.testing.assert_array_equal(_run(m2, BIG)[0], _run(m, BIG)[0])


def test_delegates_share_the_runtimes_activation_buffers():
    """The delegates of every method on a Runtime borrow one set of value buffers for their calls
    (calls through a Runtime run one at a time): an encoder of 7 delegates and a MobileNetV2 on
    one Runtime hold the buffers the larger needs, once."""
    enc = "encoder_xnn"
    alone = en.Runtime(num_threads=1).load_program(model_path(enc)).load_method("forward")
    want = _run(alone, enc)
    small = alone.memory_stats()["values"]
    rt = en.Runtime(num_threads=1)
    a = rt.load_program(model_path(BIG)).load_method("forward")
    b = rt.load_program(model_path(enc)).load_method("forward")
    _run(a, BIG)
    big = a.memory_stats()["values"]
    for o, w in zip(_run(b, enc), want):
        np.testing.assert_array_equal(o, w)
    # b reports the shared buffers (big) plus the little it keeps of its own; not its own set
    assert small < big <= b.memory_stats()["values"] < big + small
    np.testing.assert_allclose(_run(a, BIG)[0], method_outputs(reference(BIG), "forward")[0], rtol=1e-4, atol=1e-4)


RSS_CHILD = r"""
import json, sys, numpy as np, executorch_numpy_runtime as en
def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
path = sys.argv[1]
with np.load(path[:-4] + ".npz") as z:
    x = z["forward:in:0"]
base = status("VmRSS")
m = en.Runtime(num_threads=1).load_program(path).load_method("forward")
for _ in range(3):
    m([x])
print(json.dumps(dict(growth=status("VmRSS") - base, stats=m.memory_stats())))
"""


@linux
def test_rss_growth_is_bounded_by_the_weights():
    """A loaded fp32 program costs its packed weights (about its weight bytes, the file) plus the
    activation buffers the core reports, plus a few MB of runtime: not a second copy of the file."""
    path = model_path(BIG)
    r = subprocess.run([sys.executable, "-c", RSS_CHILD, path], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout.strip().splitlines()[-1])
    s, weights = row["stats"], os.path.getsize(path)
    bound = 1.1 * weights + s["values"] + s["planned"] + s["scratch"] + 8 * 2 ** 20
    assert row["growth"] < bound, (row, bound)


@linux
def test_a_constant_folded_at_load_gives_its_program_bytes_back(tmp_path):
    """permute_copy(W) -> mm folds W's copy at load: W itself is read by nothing else, so its program
    bytes are given back; a second method load reads them back (checked) and folds the same."""
    from pte_build import F32, Program
    w = np.random.default_rng(8).standard_normal((256, 512)).astype(np.float32)  # 512 KiB
    p = Program()
    x = p.tensor(F32, [1, 512], planned=True)
    wv = p.tensor(F32, [256, 512], const=w.tobytes())
    wt = p.tensor(F32, [512, 256], planned=True)
    o = p.tensor(F32, [1, 256], planned=True)
    p.call(p.op("aten::permute_copy", "out"), [wv, p.int_list([1, 0]), wt, wt])
    p.call(p.op("aten::mm", "out"), [x, wt, o, o])
    p.inputs, p.outputs = [x], [o]
    path = tmp_path / "fold.pte"
    path.write_bytes(p.to_bytes())
    xin = np.random.default_rng(9).standard_normal((1, 512)).astype(np.float32)
    prog = en.Runtime(num_threads=1).load_program(str(path))
    m = prog.load_method("forward")
    s = m.memory_stats()
    assert s["folded"] >= w.nbytes and s["program_bytes"] < w.nbytes // 2, s
    got = m([xin])[0]
    np.testing.assert_allclose(got, xin @ w.T, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(prog.load_method("forward")([xin])[0], got)
