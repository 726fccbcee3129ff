"""Lifetimes across threads and owners: closing a program in use, views kept by Python ops,
Python ops re-registered many times, names with NUL characters."""
import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import method_inputs, model_path, reference

TESTS = os.path.dirname(os.path.abspath(__file__))
OP = "mylib::scaled_add.out"  # tests/models/custom_pyop.pte


def run_python(code, timeout=120):
    """Runs CODE in a fresh interpreter (a crash must not take the test run with it)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=TESTS)


def test_close_while_other_threads_use_the_program():
    r = run_python(f"""
        import threading, executorch_numpy_runtime as en
        rt = en.Runtime.get()
        blob = open({model_path("multi_method")!r}, "rb").read()
        errors = []
        for trial in range(60):
            prog = rt.load_program(blob)
            go = threading.Event()
            def use():
                go.wait()
                for _ in range(200):
                    try:
                        prog.signature(prog.method_names[0]); prog.operators(prog.method_names[0])
                        prog.load_method(prog.method_names[0])
                    except en.ExecutionError as e:
                        if "closed" not in str(e): errors.append(e)
                        return
            ts = [threading.Thread(target=use) for _ in range(3)]
            for t in ts: t.start()
            go.set()
            prog.close()
            for t in ts: t.join()
        assert not errors, errors
        print("OK")
    """)
    assert r.returncode == 0 and "OK" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_closed_program_raises_and_methods_keep_working(rt):
    ref = reference("mlp")
    prog = rt.load_program(model_path("mlp"))
    m = prog.load_method("forward")
    prog.close()
    prog.close()
    for call in (lambda: prog.load_method("forward"), lambda: prog.signature("forward"),
                 lambda: prog.operators("forward")):
        with pytest.raises(en.ExecutionError, match="closed"):
            call()
    assert "closed" in repr(prog)
    m(method_inputs(ref, "forward"))


def test_python_op_view_kept_past_the_method():
    # big tensors: their planned memory is unmapped when freed, so a dangling view faults
    r = run_python(f"""
        import gc, numpy as np, executorch_numpy_runtime as en
        from pte_build import Program, F32
        N = 1 << 20
        p = Program()
        x, y, alpha, o = p.tensor(F32, [N]), p.tensor(F32, [N]), p.double(0.5), p.tensor(F32, [N], planned=True)
        p.call(p.op("mylib::scaled_add", "out"), [x, y, alpha, o, o])
        p.inputs, p.outputs = [x, y], [o]
        blob = p.to_bytes()
        kept = []
        def scaled_add(a, b, alpha, out):
            kept.append((a, out))
            np.add(a, alpha * b, out=out)
        en.register_op({OP!r}, scaled_add)
        for _ in range(5):
            rt = en.Runtime(num_threads=1)
            m = rt.load_program(blob).load_method("forward")
            m([np.ones(N, np.float32), np.ones(N, np.float32)])
            del m, rt
            gc.collect()
        total = sum(float(a.sum()) + float(o.sum()) for a, o in kept)  # after the methods are gone
        print("OK", total)
    """)
    assert r.returncode == 0 and "OK" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_register_unregister_cycles_free_their_functions(rt):
    def make():
        def f(a, b, alpha, out):
            np.add(a, alpha * b, out=out)
        return f

    refs = []
    for _ in range(50):
        f = make()
        refs.append(weakref.ref(f))
        en.register_op(OP, f)
        en.register_op(OP, make())  # replaced
        en.unregister_op(OP)
        del f
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


def test_loaded_method_keeps_its_python_op_after_unregister(rt):
    ref = reference("custom_pyop")
    en.register_op(OP, lambda a, b, alpha, out: np.add(a, alpha * b, out=out))
    try:
        m = rt.load_program(model_path("custom_pyop")).load_method("forward")
    finally:
        en.unregister_op(OP)
    gc.collect()
    out = m(method_inputs(ref, "forward"))[0]
    np.testing.assert_allclose(out, ref["forward:out:0"], atol=1e-6)


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_python_op_base_exceptions_propagate_as_themselves(rt, exc):
    def op(a, b, alpha, out):
        raise exc("from the op")

    en.register_op(OP, op)
    try:
        m = rt.load_program(model_path("custom_pyop")).load_method("forward")
        with pytest.raises(exc, match="from the op"):
            m(method_inputs(reference("custom_pyop"), "forward"))
    finally:
        en.unregister_op(OP)


def test_nul_in_names_is_refused(rt, tmp_path):
    prog = rt.load_program(model_path("mlp"))
    for call in (prog.load_method, prog.signature, prog.operators, prog.delegates):
        with pytest.raises(ValueError, match="NUL"):
            call("forward\0junk")
    with pytest.raises(ValueError, match="null"):
        rt.load_program(model_path("mlp") + "\0.bak")
