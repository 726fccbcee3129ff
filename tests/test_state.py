"""Stateful methods: buffers a forward updates (KV caches, running sums, counters) start from the
program's initial data, keep their contents across calls of the same loaded method, are separate
per loaded method, and go back to the initial data on Method.reset()."""
import numpy as np
import pytest

from conftest import method_calls, assert_matches, model_path, reference


def run_calls(method, ref, what):
    for k, (ins, outs) in enumerate(method_calls(ref)):
        assert_matches(method(ins), outs, 1e-6, 1e-6, f"{what} call {k}")


def test_state_persists_across_calls_and_resets(rt):
    ref = reference("kv_state")
    assert len(list(method_calls(ref))) >= 3
    prog = rt.load_program(model_path("kv_state"))
    method = prog.load_method("forward")
    state = method.metadata.state
    assert [(s.dtype, s.shape) for s in state] == [("float32", (1, 6, 4)), ("float32", (4,)), ("int64", (1,))]
    assert all(s.name for s in state)
    run_calls(method, ref, "first run")
    # without reset, the state goes on: the first call's outputs are not repeated
    first_in, first_out = next(method_calls(ref))
    again = method(first_in)
    assert not np.array_equal(again[2], first_out[2])  # the step counter went on
    method.reset()
    run_calls(method, ref, "after reset")
    # another loaded method of the same program has its own state
    other = prog.load_method("forward")
    run_calls(other, ref, "second method")
    method.reset()
    run_calls(method, ref, "after second reset")


def test_reset_on_a_stateless_method_is_harmless(rt):
    method = rt.load_program(model_path("mlp")).load_method("forward")
    assert method.metadata.state == ()
    method.reset()
    ref = reference("mlp")
    x = ref["forward:in:0"]
    np.testing.assert_allclose(method([x])[0], ref["forward:out:0"], rtol=1e-4, atol=1e-5)


def test_signature_matches_loaded_metadata_apart_from_state(rt):
    prog = rt.load_program(model_path("kv_state"))
    sig = prog.signature("forward")
    loaded = prog.load_method("forward").metadata
    assert sig.state == () and len(loaded.state) == 3
    assert sig == loaded and str(sig) == str(loaded)
