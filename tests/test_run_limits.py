"""Programs that loop: the instruction cap, timeouts, cancel() and Ctrl-C."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import executorch_numpy_runtime as en
from pte_build import F32, Program

N = 1 << 16


def looping_program(body=True):
    """forward(x): out = x + x, then JumpFalse(false) back to the start: never ends."""
    p = Program()
    x, alpha, o, cond = p.tensor(F32, [N]), p.int(1), p.tensor(F32, [N], planned=True), p.bool(False)
    if body:
        p.call(p.op("aten::add", "out"), [x, x, alpha, o, o])
    p.jump_false(cond, 0)
    p.inputs, p.outputs = [x], [o]
    return p.to_bytes()


@pytest.fixture(scope="module")
def loop_method():
    return en.Runtime(num_threads=1).load_program(looping_program()).load_method()


def test_instruction_cap(rt):
    m = rt.load_program(looping_program(body=False)).load_method()
    t = time.monotonic()
    with pytest.raises(en.ExecutionError, match="exceeded the limit of 10000000 instructions"):
        m([np.ones(N, np.float32)])
    assert time.monotonic() - t < 10


def test_timeout(loop_method):
    t = time.monotonic()
    with pytest.raises(en.ExecutionError, match="timed out"):
        loop_method([np.ones(N, np.float32)], timeout=0.2)
    assert time.monotonic() - t < 1.5
    with pytest.raises(ValueError):
        loop_method([np.ones(N, np.float32)], timeout=-1)


def test_cancel_from_another_thread(loop_method):
    def cancel_soon():
        time.sleep(0.3)
        loop_method.cancel()

    threading.Thread(target=cancel_soon).start()
    t = time.monotonic()
    with pytest.raises(en.ExecutionError, match="cancelled"):
        loop_method([np.ones(N, np.float32)])
    assert time.monotonic() - t < 1.5
    # the method stays usable
    with pytest.raises(en.ExecutionError, match="timed out"):
        loop_method([np.ones(N, np.float32)], timeout=0.05)


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler for the test: a process started in the background by a
    non-interactive shell inherits SIGINT ignored, and an ignored SIGINT rightly stops nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="needs the main thread")
def test_ctrl_c_interrupts_a_long_call(loop_method, python_sigint):
    sent = []

    def interrupt():
        time.sleep(0.3)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=interrupt)
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            loop_method([np.ones(N, np.float32)], timeout=20)
    finally:
        _no_sigint_after_the_test(sender)
    assert time.monotonic() - sent[0] < 0.3  # within ~0.1 s (slack for a loaded machine)


def _no_sigint_after_the_test(sender):
    """Waits for the thread that sends the SIGINT, so that it cannot arrive after the test: a call
    that failed otherwise, or a KeyboardInterrupt raised late (after the call's own error), fails
    this test here instead of interrupting the whole session somewhere in pytest."""
    try:
        sender.join()
        if hasattr(signal, "pthread_sigmask"):  # runs a pending handler now (PyPy may hold it back)
            signal.pthread_sigmask(signal.SIG_BLOCK, ())
    except KeyboardInterrupt:
        pytest.fail("the SIGINT surfaced after the call had returned")


def test_ctrl_c_while_the_call_is_prepared_is_not_lost(loop_method, monkeypatch):
    """A SIGINT that arrives after the call began in Python but before the native run starts
    (here: while an input is converted) still stops the call, instead of running to its timeout."""
    import executorch_numpy_runtime.runtime as rtmod
    seen = []
    previous = signal.signal(signal.SIGINT, lambda s, f: seen.append(s))  # Python only records it
    convert = rtmod.Method._tensor

    def convert_and_interrupt(self, i, x, code):
        os.kill(os.getpid(), signal.SIGINT)
        return convert(self, i, x, code)

    monkeypatch.setattr(rtmod.Method, "_tensor", convert_and_interrupt)
    try:
        t = time.monotonic()
        with pytest.raises((KeyboardInterrupt, en.ExecutionError), match="interrupt|^$"):
            loop_method([[1.0] * N], timeout=20)  # a list: converted in Python, after the limits are set
        assert time.monotonic() - t < 5
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="needs the main thread")
def test_the_sigint_handler_is_rechecked_except_after_a_short_call(monkeypatch):
    """The re-chain check (a sigaction query, a system call) runs before a main-thread call unless
    the method's previous call took under 1 ms; a failed call counts as a long one."""
    import executorch_numpy_runtime.method as methodmod

    class CountingLib:
        def __init__(self, real):
            self.real, self.watched = real, 0

        def __getattr__(self, name):
            if name == "etnp_method_watch_interrupts":
                def watch(ptr):
                    self.watched += 1
                    return self.real.etnp_method_watch_interrupts(ptr)
                return watch
            return getattr(self.real, name)

    p = Program()
    x, alpha, o = p.tensor(F32, [4]), p.int(1), p.tensor(F32, [4], planned=True)
    p.call(p.op("aten::add", "out"), [x, x, alpha, o, o])
    p.inputs, p.outputs = [x], [o]
    m = en.Runtime(num_threads=1).load_program(p.to_bytes()).load_method()
    counting = CountingLib(methodmod.lib)
    monkeypatch.setattr(methodmod, "lib", counting)
    now = [0.0]

    def clock(step):
        def read():
            now[0] += step
            return now[0]
        return read

    x = np.ones(4, np.float32)
    monkeypatch.setattr(methodmod, "_clock", clock(1e-6))  # every call 1 us
    for _ in range(20):
        np.testing.assert_array_equal(m([x])[0], 2 * x)
    assert counting.watched == 1  # the first call only
    monkeypatch.setattr(methodmod, "_clock", clock(5e-3))  # every call 5 ms
    for _ in range(5):
        m([x])
    assert counting.watched == 1 + 4  # (the first 5 ms call follows a short one: unchecked; then each)
    with pytest.raises(en.ExecutionError):
        m([np.ones(3, np.float32)])  # a call that fails counts as a long one
    monkeypatch.setattr(methodmod, "_clock", clock(1e-6))
    m([x])
    assert counting.watched == 1 + 4 + 1 + 1  # the failed call checked, and the one after it
