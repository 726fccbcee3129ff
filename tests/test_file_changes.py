"""A model file that changes under a loaded program: the default (read into memory, a big file's
weights as its methods load) is immune or raises ProgramLoadError, never reads other weights;
mapping is an explicit opt-in (load_program(path, mmap=True))."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np

from conftest import method_inputs, method_outputs, model_path, reference


def test_truncated_or_rewritten_file_changes_nothing(rt, tmp_path):
    ref = reference("mlp_xnn")
    path = str(tmp_path / "m.pte")
    shutil.copy(model_path("mlp_xnn"), path)
    prog = rt.load_program(path)
    m = prog.load_method("forward")
    first = m(method_inputs(ref, "forward"))
    with open(path, "r+b") as fh:  # rewritten in place: every byte inverted
        data = fh.read()
        fh.seek(0)
        fh.write(bytes(b ^ 0xFF for b in data))
    m2 = prog.load_method("forward")  # loading later reads nothing from the file either
    for meth in (m, m2):
        for a, b in zip(meth(method_inputs(ref, "forward")), first):
            np.testing.assert_array_equal(a, b)
    os.truncate(path, 0)
    for a, b in zip(prog.load_method("forward")(method_inputs(ref, "forward")), method_outputs(ref, "forward")):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4)


def _truncate_before_method_load(path):
    code = textwrap.dedent(f"""
        import os, numpy as np, executorch_numpy_runtime as en
        prog = en.Runtime.get().load_program({path!r})
        os.truncate({path!r}, 0)
        try:
            m = prog.load_method("forward")
            m([np.zeros((1, 3, 224, 224), np.float32)])
            print("RAN")
        except en.ProgramLoadError as e:
            assert "changed since the program was loaded" in str(e), e
            print("RAISED")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    return r.stdout.strip()


def test_truncated_file_does_not_crash(tmp_path):
    # a mapped file truncated under the program faults (SIGBUS) on first touch of a lost page; a
    # file read in part (over 1 MiB, not modified in the last 2 s: the rest as methods need it)
    # raises; a file written just now is read whole, so the program does not need it again
    path = str(tmp_path / "m.pte")
    shutil.copy2(model_path("mobilenet_v2_xnn"), path)  # (copy2: the fixture's old timestamps)
    assert os.path.getsize(path) > 1 << 20
    assert _truncate_before_method_load(path) == "RAISED"
    shutil.copy(model_path("mobilenet_v2_xnn"), path)  # (modified now)
    assert _truncate_before_method_load(path) == "RAN"


def _load_and_run(prog, ref):
    m = prog.load_method("forward")
    return [np.array(a) for a in m(method_inputs(ref, "forward"))]


def test_big_file_read_as_methods_need_it(rt, tmp_path):
    # a file over 1 MiB: its filters are read from the file into the packer's scratch, never
    # resident; the results are the bits of a program given as bytes (held whole)
    ref = reference("mobilenet_v2_xnn")
    path = str(tmp_path / "m.pte")
    shutil.copy2(model_path("mobilenet_v2_xnn"), path)
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        whole = _load_and_run(rt.load_program(fh.read()), ref)
    prog = rt.load_program(path)
    m = prog.load_method("forward")
    for a, b in zip(m(method_inputs(ref, "forward")), whole):
        np.testing.assert_array_equal(a, b)
    # (held: the first MiB, the flatbuffer and what is read in place - not the filters)
    assert m.memory_stats()["program_bytes"] < size // 4, (m.memory_stats(), size)
    # deleted, or replaced by another file (renamed over it): still read as it was (kept open)
    os.replace(path, str(tmp_path / "moved.pte"))
    shutil.copy(model_path("mlp_xnn"), path)
    for a, b in zip(_load_and_run(prog, ref), whole):
        np.testing.assert_array_equal(a, b)
    os.remove(str(tmp_path / "moved.pte"))
    for a, b in zip(_load_and_run(prog, ref), whole):
        np.testing.assert_array_equal(a, b)


def test_big_file_rewritten_in_place_raises(rt, tmp_path):
    ref = reference("mobilenet_v2_xnn")
    path = str(tmp_path / "m.pte")
    shutil.copy2(model_path("mobilenet_v2_xnn"), path)
    prog = rt.load_program(path)
    m = prog.load_method("forward")
    first = [np.array(a) for a in m(method_inputs(ref, "forward"))]
    with open(path, "r+b") as fh:  # same size, other bytes past the first MiB
        fh.seek(2 << 20)
        block = fh.read(1 << 20)
        fh.seek(2 << 20)
        fh.write(bytes(b ^ 0x5A for b in block))
    import pytest
    import executorch_numpy_runtime as en
    with pytest.raises(en.ProgramLoadError, match="changed since the program was loaded"):
        prog.load_method("forward")  # (its filters are read again: never different weights)
    for a, b in zip(m(method_inputs(ref, "forward")), first):  # the loaded method is unaffected
        np.testing.assert_array_equal(a, b)


def test_mmap_is_an_explicit_opt_in(rt):
    ref = reference("mlp")
    m = rt.load_program(model_path("mlp"), mmap=True).load_method("forward")
    for a, b in zip(m(method_inputs(ref, "forward")), method_outputs(ref, "forward")):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4)
    import pytest
    with pytest.raises(ValueError, match="mmap=True needs a path"):
        rt.load_program(b"1234", mmap=True)


def test_descriptors_only_for_files_read_in_part(rt, tmp_path):
    # a file read whole holds no descriptor once loaded (thousands of small programs may be
    # loaded at once); one read in part holds one while the program lives
    import gc
    import pytest
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc/self/fd")
    small = str(tmp_path / "small.pte")
    big = str(tmp_path / "big.pte")
    shutil.copy2(model_path("mlp_xnn"), small)
    shutil.copy2(model_path("mobilenet_v2_xnn"), big)
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    progs = [rt.load_program(small) for _ in range(40)]
    assert len(os.listdir("/proc/self/fd")) <= before + 2
    progs += [rt.load_program(big) for _ in range(3)]
    assert len(os.listdir("/proc/self/fd")) >= before + 3
    del progs
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= before + 2
