"""pytest plugin: run ExecuTorch's own backend tests against an out-of-process .pte runtime.

Load with `-p et_conformance.plugin` (tools/ on PYTHONPATH). It replaces only the execute step
of the test harness, `Serialize.run_artifact` (which would load the wheel's pybindings, unusable
with this torch), by a call into a long-lived worker subprocess running `executorch_numpy_runtime`
under another interpreter (ours or the reference build). `Serialize.run` is wrapped only to note
the method's input/output dtypes and dim orders from the program it serializes. Export, lowering,
serialization, the eager reference and the comparison all stay the harness's own.
"""

import json
import os
import time

import pytest

from . import client, pybindings_stub, tensors

RUNTIMES = {
    "ours": ("/work/main/.venv/bin/python", "strided", "logical"),
    "ref": ("/work/envs/ref-venv/bin/python", "bytes", "bytes"),
}


class _State:
    worker = None
    runtime = None
    cl_input = "bytes"
    cl_output = "bytes"
    calls = 0
    results = None
    stub = False


STATE = _State()


def pytest_addoption(parser):
    g = parser.getgroup("et_conformance", "ExecuTorch conformance: out-of-process .pte runtime")
    g.addoption("--et-runtime", default=os.environ.get("ETC_RUNTIME", "ours"), choices=sorted(RUNTIMES),
                help="runtime preset: ours or ref (env ETC_RUNTIME)")
    g.addoption("--et-python", default=os.environ.get("ETC_PYTHON"),
                help="interpreter with executorch_numpy_runtime (env ETC_PYTHON; default from --et-runtime)")
    g.addoption("--et-call-timeout", type=float, default=float(os.environ.get("ETC_CALL_TIMEOUT", "180")),
                help="seconds one execute call may take before the worker is killed and restarted")
    g.addoption("--et-cl-input", default=os.environ.get("ETC_CL_INPUT"), choices=["bytes", "strided", "logical"],
                help="how non-default dim-order inputs are passed (see worker.py)")
    g.addoption("--et-cl-output", default=os.environ.get("ETC_CL_OUTPUT"), choices=["bytes", "logical"],
                help="how non-default dim-order outputs come back")
    g.addoption("--et-log-dir", default=os.environ.get("ETC_LOG_DIR", "/tmp/et_conformance"),
                help="worker stderr logs")
    g.addoption("--et-results", default=os.environ.get("ETC_RESULTS"),
                help="append one JSON line per test (nodeid, outcome, message, execute calls)")


def _patch_harness():
    from executorch.backends.test.harness.stages import serialize as ser
    if getattr(ser.Serialize, "_etc_patched", False):
        return
    orig_run = ser.Serialize.run

    def run(self, artifact, inputs=None):
        orig_run(self, artifact, inputs)
        try:
            self._etc_io = tensors.plan_io(artifact.executorch_program)
        except Exception:
            self._etc_io = None

    def run_artifact(self, inputs):
        return _execute(self.buffer, "forward", inputs, getattr(self, "_etc_io", None))

    ser.Serialize.run = run
    ser.Serialize.run_artifact = run_artifact
    ser.Serialize._etc_patched = True


def _execute(buffer, method, inputs, io=None):
    """Run method of a serialized program in the worker; outputs as pybindings return them."""
    from torch.utils._pytree import tree_flatten

    flat, _ = tree_flatten(inputs)
    specs, arrays = tensors.encode_inputs(flat, io)
    STATE.calls += 1
    out_specs, out_arrays = STATE.worker.run(buffer, method, specs, arrays, STATE.cl_input)
    return tensors.decode_outputs(out_specs, out_arrays, io, STATE.cl_output)


def _io_of_buffer(buffer, method):
    """The method's input/output metadata read back from .pte bytes (None if that fails)."""
    try:
        from executorch.exir._serialize._program import deserialize_pte_binary

        pte = deserialize_pte_binary(buffer)
        return tensors.plan_io(getattr(pte, "program", pte), method)
    except Exception:
        return None


def _install_pybindings_stub():
    try:
        import executorch.extension.pybindings.portable_lib  # noqa: F401
        return False  # the real ones load: leave them (only run_artifact is redirected)
    except ImportError:
        pass
    pybindings_stub.install(lambda buf, method, inputs: _execute(buf, method, inputs, _io_of_buffer(buf, method)))
    return True


def pytest_configure(config):
    name = config.getoption("--et-runtime")
    python, cl_in, cl_out = RUNTIMES[name]
    STATE.runtime = name
    STATE.cl_input = config.getoption("--et-cl-input") or cl_in
    STATE.cl_output = config.getoption("--et-cl-output") or cl_out
    STATE.worker = client.WorkerClient(
        config.getoption("--et-python") or python,
        call_timeout=config.getoption("--et-call-timeout"),
        log_dir=config.getoption("--et-log-dir"),
    )
    STATE.results = config.getoption("--et-results")
    STATE.stub = _install_pybindings_stub()
    _patch_harness()


def pytest_report_header(config):
    w = STATE.worker
    return [f"et_conformance: runtime={STATE.runtime} python={w.python} "
            f"cl_input={STATE.cl_input} cl_output={STATE.cl_output} call_timeout={w.call_timeout}s "
            f"pybindings={'stub' if STATE.stub else 'real'}"]


def pytest_unconfigure(config):
    if STATE.worker is not None:
        STATE.worker.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    before = STATE.calls
    yield
    item.user_properties.append(("et_calls", STATE.calls - before))


def pytest_runtest_logreport(report):
    if not STATE.results:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed") or (
        report.when == "teardown" and report.outcome == "failed"
    ):
        msg = ""
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            msg = crash.message
        elif isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:  # skip: (file, line, reason)
            msg = str(report.longrepr[2])
        elif report.longrepr is not None:
            msg = str(report.longrepr)[-2000:]
        outcome = report.outcome
        if report.when != "call" and outcome == "failed":
            outcome = "error"
        if hasattr(report, "wasxfail"):
            outcome = "xfail" if outcome == "skipped" else "xpass"
        rec = {
            "nodeid": report.nodeid,
            "when": report.when,
            "outcome": outcome,
            "message": msg,
            "duration": round(report.duration, 2),
            "et_calls": dict(report.user_properties).get("et_calls", 0),
            "runtime": STATE.runtime,
            "time": time.strftime("%H:%M:%S"),
        }
        with open(STATE.results, "a") as f:
            f.write(json.dumps(rec) + "\n")
