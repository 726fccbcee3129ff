"""Operators defined in Python (en.register_op) and the bundled native custom kernels."""
import threading

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import method_inputs, method_outputs, model_path, reference

OP = "mylib::scaled_add.out"  # used by tests/models/custom_pyop.pte: relu(scaled_add(a, b, 0.5))


@pytest.fixture
def unregister():
    yield
    if OP in en.registered_ops():
        en.unregister_op(OP)


def _run_pyop(rt=None):
    rt = rt or en.Runtime.get()
    ref = reference("custom_pyop")
    m = rt.load_program(model_path("custom_pyop")).load_method("forward")
    return m(method_inputs(ref, "forward")), method_outputs(ref, "forward")


def test_unregistered_python_op_is_named(unregister):
    assert OP not in en.registered_ops()
    with pytest.raises(en.OperatorNotFound, match="mylib::scaled_add.out"):
        _run_pyop()


def test_python_op_writes_out_in_place(unregister):
    seen = []

    def scaled_add(a, b, alpha, out):
        seen.append((a.flags.writeable, out.flags.writeable, alpha, a.dtype, out.shape))
        np.add(a, alpha * b, out=out)

    en.register_op(OP, scaled_add)
    assert OP in en.registered_ops()
    assert OP in en.runtime_info()["python_ops"]
    outs, refs = _run_pyop()
    np.testing.assert_allclose(outs[0], refs[0], atol=1e-6, rtol=1e-6)
    assert seen == [(False, True, 0.5, np.float32, (3, 4))]


def test_python_op_returns_result_decorator_form(unregister):
    @en.register_op(OP)
    def scaled_add(a, b, alpha, out):
        return a + alpha * b  # float64 if alpha were an array; here float32, copied into out

    outs, refs = _run_pyop()
    np.testing.assert_allclose(outs[0], refs[0], atol=1e-6, rtol=1e-6)
    # the op's values really come from Python: a different function changes the answer
    en.register_op(OP, lambda a, b, alpha, out: a - alpha * b)
    outs2, _ = _run_pyop()
    ref = reference("custom_pyop")
    a, b = ref["forward:in:0"], ref["forward:in:1"]
    np.testing.assert_allclose(outs2[0], np.maximum(a - 0.5 * b, 0), atol=1e-6)


def test_python_op_exception_is_chained(unregister):
    def broken(a, b, alpha, out):
        raise ZeroDivisionError("boom from python")

    en.register_op(OP, broken)
    with pytest.raises(en.ExecutionError, match="boom from python") as ei:
        _run_pyop()
    assert isinstance(ei.value.__cause__, ZeroDivisionError)
    # the runtime stays usable afterwards
    en.register_op(OP, lambda a, b, alpha, out: np.add(a, alpha * b, out=out))
    outs, refs = _run_pyop()
    np.testing.assert_allclose(outs[0], refs[0], atol=1e-6)


def test_python_op_wrong_result_shape_is_rejected(unregister):
    en.register_op(OP, lambda a, b, alpha, out: np.zeros((1000, 1000), np.float32))
    with pytest.raises(en.ExecutionError, match="scaled_add"):
        _run_pyop()
    en.register_op(OP, lambda a, b, alpha, out: (a, b))  # two results for one output
    with pytest.raises(en.ExecutionError, match="returned 2 values"):
        _run_pyop()
    en.register_op(OP, lambda a, b, alpha, out: np.full(a.shape, "x"))  # not castable
    with pytest.raises(en.ExecutionError, match="scaled_add"):
        _run_pyop()


def test_python_op_may_not_reenter_its_runtime(unregister):
    rt = en.Runtime(num_threads=1)
    inner_prog = rt.load_program(model_path("add"))
    inner = inner_prog.load_method("forward")
    inner_in = method_inputs(reference("add"), "forward")

    def reentrant(a, b, alpha, out):
        inner(inner_in)
        np.add(a, alpha * b, out=out)

    en.register_op(OP, reentrant)
    with pytest.raises(en.ExecutionError) as ei:
        _run_pyop(rt)
    assert "same Runtime" in str(ei.value) or "same Runtime" in str(ei.value.__cause__)
    # loading programs or methods on it from inside the op is refused too, instead of deadlocking
    for use in (lambda: rt.load_program(model_path("add")), lambda: inner_prog.load_method("forward")):
        en.register_op(OP, lambda a, b, alpha, out, use=use: use())
        with pytest.raises(en.ExecutionError) as ei:
            _run_pyop(rt)
        assert "same Runtime" in str(ei.value.__cause__)
    # another Runtime may be used from inside the op
    en.register_op(OP, reentrant)
    other = en.Runtime(num_threads=1)
    outs, refs = _run_pyop(other)
    np.testing.assert_allclose(outs[0], refs[0], atol=1e-6)


def test_python_op_from_many_threads(unregister):
    en.register_op(OP, lambda a, b, alpha, out: np.add(a, alpha * b, out=out))
    ref = reference("custom_pyop")
    rts = [en.Runtime(num_threads=1) for _ in range(4)]
    methods = [r.load_program(model_path("custom_pyop")).load_method("forward") for r in rts]
    errors = []

    def work(m):
        try:
            for _ in range(50):
                np.testing.assert_allclose(m(method_inputs(ref, "forward"))[0], ref["forward:out:0"], atol=1e-6)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(m,)) for m in methods]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_loaded_method_keeps_its_python_op_after_unregister(unregister):
    en.register_op(OP, lambda a, b, alpha, out: np.add(a, alpha * b, out=out))
    ref = reference("custom_pyop")
    m = en.Runtime.get().load_program(model_path("custom_pyop")).load_method("forward")
    en.unregister_op(OP)
    assert OP not in en.registered_ops()
    np.testing.assert_allclose(m(method_inputs(ref, "forward"))[0], ref["forward:out:0"], atol=1e-6)
    with pytest.raises(en.OperatorNotFound):
        _run_pyop()
    with pytest.raises(KeyError):
        en.unregister_op(OP)


def test_register_op_refuses_native_names_and_bad_arguments():
    with pytest.raises(ValueError, match="aten::add.out"):
        en.register_op("aten::add.out", lambda *a, **k: None)
    with pytest.raises(ValueError):
        en.register_op("etnp::lstm.out", lambda *a, **k: None)
    with pytest.raises(TypeError):
        en.register_op("mylib::x.out", 42)
    with pytest.raises(ValueError):
        en.register_op("mylib::x.out", lambda: None, num_outputs=-1)
    assert "mylib::x.out" not in en.registered_ops()


def test_kernel_libs_come_from_the_registry():
    info = en.runtime_info()
    libs = info["kernel_libs"]
    for lib in ("portable", "optimized", "quantized", "lstm", "custom"):
        assert lib in libs
    ops = info["operators"]
    assert "etnp::lstm.out" in ops and "etnp::triple.out" in ops


def test_lstm_kernel_rejects_bad_shapes(rt):
    m = rt.load_program(model_path("custom_lstm")).load_method("forward")
    ref = reference("custom_lstm")
    x, h, c = method_inputs(ref, "forward")
    with pytest.raises(en.ExecutionError):
        m([x.astype(np.float64), h, c])
    with pytest.raises(en.ExecutionError):
        m([x[:, :, :5].copy(), h, c])


GC_SCRIPT = r"""
import gc, sys
import numpy as np
import executorch_numpy_runtime as en

models = sys.argv[1]
rt = en.Runtime(num_threads=1)

class Holder:  # a reference cycle: only the garbage collector frees the method it holds
    pass

def make_garbage():
    h = Holder()
    h.self = h
    h.m = rt.load_program(models + "/add.pte").load_method("forward")

def op(a, b, alpha, out):
    gc.collect()  # destroys a method of the Runtime that is running this op
    np.add(a, alpha * b, out=out)

gc.disable()  # the collection must happen inside the op
en.register_op("mylib::scaled_add.out", op)
m = rt.load_program(models + "/custom_pyop.pte").load_method("forward")
x = np.ones((3, 4), np.float32)
for _ in range(3):
    make_garbage()
    y = m([x, x])[0]
assert np.allclose(y, 1.5), y
print("ok")
"""


def test_garbage_collection_inside_python_op_does_not_deadlock(tmp_path):
    """gc inside a Python op may destroy methods of the Runtime whose call is running the op."""
    import os
    import subprocess
    import sys

    script = tmp_path / "gc_in_op.py"
    script.write_text(GC_SCRIPT)
    models = os.path.dirname(model_path("add"))
    env = dict(os.environ)
    import executorch_numpy_runtime
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(executorch_numpy_runtime.__file__))
    r = subprocess.run([sys.executable, str(script), models], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_python_op_out_that_is_a_constant_is_refused(unregister):
    """A malformed program whose Python operator's out (and the return repeating it) is one of the
    program's constants: the function never sees it as a writable array (it would overwrite the
    constant for every later call), in either form - writing out in place or returning a result."""
    from pte_build import F32, Program
    w0 = np.arange(12, dtype=np.float32).reshape(3, 4)
    p = Program()
    x = p.tensor(F32, [3, 4], planned=True)
    w = p.tensor(F32, [3, 4], const=w0.tobytes())
    o = p.tensor(F32, [3, 4], planned=True)
    p.call(p.op("mylib::scaled_add", "out"), [x, x, p.double(0.5), w, w])
    p.call(p.op("aten::add", "out"), [x, w, p.int(1), o, o])
    p.inputs, p.outputs = [x], [o]
    data = p.to_bytes()
    calls = []
    for fn in (lambda a, b, alpha, out: calls.append(1) or np.add(a, alpha * b, out=out),
               lambda a, b, alpha, out: calls.append(1) or a + alpha * b):
        en.register_op(OP, fn)
        m = en.Runtime.get().load_program(data).load_method("forward")
        with pytest.raises(en.ExecutionError, match="is a constant of the program"):
            m([np.ones((3, 4), np.float32)])
        en.unregister_op(OP)
    assert calls == []

