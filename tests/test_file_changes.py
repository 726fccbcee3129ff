"""A model file that changes under a loaded program: the default (read into memory) is immune;
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


def test_truncated_file_does_not_crash(tmp_path):
    # a mapped file truncated under the program faults (SIGBUS) on first touch of a lost page
    path = str(tmp_path / "m.pte")
    shutil.copy(model_path("mobilenet_v2_xnn"), path)
    code = textwrap.dedent(f"""
        import os, numpy as np, executorch_numpy_runtime as en
        prog = en.Runtime.get().load_program({path!r})
        os.truncate({path!r}, 0)
        m = prog.load_method("forward")
        m([np.zeros((1, 3, 224, 224), np.float32)])
        print("OK")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_mmap_is_an_explicit_opt_in(rt):
    ref = reference("mlp")
    m = rt.load_program(model_path("mlp"), mmap=True).load_method("forward")
    for a, b in zip(m(method_inputs(ref, "forward")), method_outputs(ref, "forward")):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4)
    import pytest
    with pytest.raises(ValueError, match="mmap=True needs a path"):
        rt.load_program(b"1234", mmap=True)
