import os

import numpy as np
import pytest

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


def model_path(name):
    return os.path.join(MODELS, name + ".pte")


def reference(name):
    with np.load(os.path.join(MODELS, name + ".npz")) as z:
        return {k: z[k] for k in z.files}


def method_inputs(ref, method):
    n = len([k for k in ref if k.startswith(method + ":in:")])
    return [ref[f"{method}:in:{i}"] for i in range(n)]


def method_outputs(ref, method):
    n = len([k for k in ref if k.startswith(method + ":out:")])
    return [ref[f"{method}:out:{i}"] for i in range(n)]


def method_calls(ref, method="forward"):
    """(inputs, outputs) of each recorded successive call `M:call{k}:in/out:i` of a stateful method."""
    k = 0
    while f"{method}:call{k}:in:0" in ref:
        n_in = len([x for x in ref if x.startswith(f"{method}:call{k}:in:")])
        n_out = len([x for x in ref if x.startswith(f"{method}:call{k}:out:")])
        yield ([ref[f"{method}:call{k}:in:{i}"] for i in range(n_in)],
               [ref[f"{method}:call{k}:out:{i}"] for i in range(n_out)])
        k += 1


def assert_matches(outs, refs, atol, rtol, what=""):
    assert len(outs) == len(refs), f"{what}: {len(outs)} outputs, expected {len(refs)}"
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert isinstance(o, np.ndarray), f"{what} output {i} is {type(o)}"
        assert o.shape == r.shape, f"{what} output {i}: shape {o.shape} != {r.shape}"
        assert o.dtype == r.dtype, f"{what} output {i}: dtype {o.dtype} != {r.dtype}"
        if r.dtype.kind in "biu":
            np.testing.assert_array_equal(o, r, err_msg=f"{what} output {i}")
        else:
            np.testing.assert_allclose(o.astype(np.float64), r.astype(np.float64), atol=atol, rtol=rtol,
                                       equal_nan=True, err_msg=f"{what} output {i}")


def run_with_cpu(cpu, script, *args, timeout=300):
    """Runs SCRIPT (``python -c``) with ETNP_CPU=cpu in a subprocess (the variable is read once per
    process), this checkout's package importable, the tests folder as its first argument and cwd."""
    import subprocess
    import sys

    import executorch_numpy_runtime
    env = dict(os.environ, ETNP_CPU=cpu)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(executorch_numpy_runtime.__file__))
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    return subprocess.run([sys.executable, "-c", script, tests_dir, *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=tests_dir)


@pytest.fixture(scope="session")
def rt():
    import executorch_numpy_runtime as en
    return en.Runtime.get()
