"""Reliability round three (issue #30): silent wrong results and undefined conversions of the API.

Each test here failed before its fix: an infinite timeout, negative indices wrapped by embedding /
index_select, two generations sharing one KV cache, overlapping output arrays, a str data_files,
context lengths past the program's cache, token ids converted with int(), the drop-in's KeyError,
pickling a Runtime, mmap=True ignored for bundled programs, unbounded operator names.
"""
import pickle
import threading

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import MODELS, method_inputs, method_outputs, model_path, reference
from executorch_numpy_runtime import executorch_runtime as drop_in
from executorch_numpy_runtime.llm import Generator

LLM = model_path("llm_fp32_kv")  # forward(int64[<=1, <=47] tokens, int64[1] input_pos): 30+ instructions


def _llm_call(m, tok=1, pos=0, **kw):
    return m([np.array([[tok]], np.int64), np.array([pos], np.int64)], **kw)


# 1. timeouts: +inf (and any deadline past the clock's range) is none; NaN, 0 and negatives refused
@pytest.mark.parametrize("timeout", [float("inf"), 1e10, 1e300, 10 ** 400, np.float64("inf"), 3600])
def test_unbounded_timeouts_mean_no_deadline(rt, timeout):
    m = rt.load_program(LLM).load_method()
    want = _llm_call(m)[0]
    m.reset()
    np.testing.assert_array_equal(_llm_call(m, timeout=timeout)[0], want)


@pytest.mark.parametrize("timeout", [float("nan"), 0, 0.0, -1, -float("inf"), "1", True, [1]])
def test_bad_timeouts_refused(rt, timeout):
    m = rt.load_program(LLM).load_method()
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        _llm_call(m, timeout=timeout)


# 2. index semantics as torch's: embedding / index_select / gather refuse negative indices
def test_embedding_refuses_negative_token(rt):
    m = rt.load_program(LLM).load_method()
    for tok in (-1, -256, 256):
        with pytest.raises(en.ExecutionError, match=r"embedding: index %d is out of range \[0, 256\)" % tok):
            _llm_call(m, tok=tok)


def test_index_ops_refuse_negative_indices(rt):
    ref = reference("ops_index")
    m = rt.load_program(model_path("ops_index")).load_method()
    x, idx, tok = method_inputs(ref, "forward")
    outs = m([x, idx, tok])
    np.testing.assert_allclose(outs[0], method_outputs(ref, "forward")[0], rtol=1e-6)
    with pytest.raises(en.ExecutionError, match="index_select: index -1 is out of range"):
        m([x, np.array([4, -1, 2], np.int64), tok])  # torch: IndexError (index out of range in self)
    with pytest.raises(en.ExecutionError, match="embedding: index -1 is out of range"):
        m([x, idx, np.array([[1, 2], [-1, 0]], np.int64)])


# 3. one live generation per Generator (one KV cache)
def test_interleaved_generations_never_share_the_cache():
    g = Generator(LLM)
    alone = list(g.generate([1, 2, 3], 6))
    a = g.generate([1, 2, 3], 6)
    b = g.generate([4, 5, 6], 6)
    assert next(a) == alone[0]
    next(b)  # takes the cache over
    with pytest.raises(RuntimeError, match="started another generation"):
        next(a)
    assert list(g.generate([1, 2, 3], 6)) == alone
    c = g.generate([1, 2, 3], 6)
    next(c)
    g.reset()
    with pytest.raises(RuntimeError, match="reset"):
        next(c)
    # one after the other is fine, and so is a closed one followed by another
    d = g.generate([1, 2, 3], 6)
    next(d)
    d.close()
    assert list(g.generate([1, 2, 3], 6)) == alone


# 4. outputs=: overlapping arrays refused; an output overlapping an input still gets the right answer
def test_overlapping_outputs_refused(rt):
    m = rt.load_program(model_path("named_io")).load_method()
    ref = reference("named_io")
    ins = method_inputs(ref, "forward")
    want = method_outputs(ref, "forward")
    a = np.empty_like(want[0])
    if want[0].shape == want[1].shape and want[0].dtype == want[1].dtype:
        with pytest.raises(ValueError, match="share memory"):
            m(ins, outputs=[a, a])
    buf = np.empty(want[0].size + want[1].size + 1, want[0].dtype)
    first = buf[:want[0].size].reshape(want[0].shape)
    second = buf[want[0].size - 1:want[0].size - 1 + want[1].size].reshape(want[1].shape)  # one element shared
    with pytest.raises(ValueError, match=r"outputs\[0\] and outputs\[1\] share memory"):
        m(ins, outputs=[first, second])
    # views of one buffer that do not overlap are fine
    second = buf[want[0].size:want[0].size + want[1].size].reshape(want[1].shape)
    res = m(ins, outputs=[first, second])
    np.testing.assert_allclose(res[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[1], want[1], rtol=1e-5, atol=1e-6)


def test_output_aliasing_an_input_reads_the_input_first(rt):
    m = rt.load_program(model_path("mlp_xnn")).load_method()
    ref = reference("mlp_xnn")
    (x,) = method_inputs(ref, "forward")
    want = method_outputs(ref, "forward")[0]
    assert want.size <= x.size
    buf = x.copy()
    out = buf.reshape(-1)[:want.size].reshape(want.shape)  # the output array lies over the input
    res = m([buf], outputs=[out])
    assert res[0] is out
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


# 6. data_files: one path (a str is not a list of one-character paths)
def test_data_files_takes_one_path(rt):
    ptd = f"{MODELS}/mlp_external.ptd"
    ref = reference("mlp_external")
    for files in (ptd, [ptd], (ptd,)):
        m = rt.load_program(model_path("mlp_external"), data_files=files).load_method("forward")
        np.testing.assert_allclose(m(method_inputs(ref, "forward"))[0], method_outputs(ref, "forward")[0],
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="data_files takes"):
        rt.load_program(model_path("mlp_external"), data_files={ptd})


@pytest.mark.parametrize("bad", ["/dev/zero", "dir", "fifo"])
def test_data_files_not_regular(rt, tmp_path, bad):
    import os
    if bad == "dir":
        bad = str(tmp_path)
    elif bad == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        bad = str(tmp_path / "f")
        os.mkfifo(bad)
    elif not os.path.exists(bad):
        pytest.skip("no /dev/zero here")
    with pytest.raises(en.ProgramLoadError, match="cannot read data file .*(not a regular file|is a directory)"):
        rt.load_program(model_path("mlp_external"), data_files=bad)
    with pytest.raises(en.ProgramLoadError, match="not a regular file|is a directory"):
        rt.load_program(bad)


# 9. context length: checked against the program's, and named when a call would pass it
def test_context_length_checked():
    with pytest.raises(ValueError, match="above the program's context length of 48"):
        Generator(LLM, max_context_len=49)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_context_len must be a positive int"):
            Generator(LLM, max_context_len=bad)
    g = Generator(LLM, max_context_len=10)
    assert len(list(g.generate([1, 2, 3], 100, ignore_eos=True))) == 7  # stops at the context's end
    with pytest.raises(ValueError, match="context holds 10"):
        g.generate(list(range(3, 14)), 1)
    with pytest.raises(ValueError, match="past the context length of 10"):
        g._logits([5], 10)


def test_context_length_not_recorded_named_in_errors():
    g = Generator(LLM)
    g._recorded_context_len, g.max_context_len = None, 1000  # as for a program that records none
    g.reset()
    with pytest.raises(en.ExecutionError, match="no context length and max_context_len=1000 was assumed"):
        g._logits([5], 60)


# 10. the rest
def test_token_ids_must_be_ints():
    g = Generator(LLM)
    for bad in (["2"], [2.7], [1, True], "12", [None]):
        with pytest.raises(TypeError, match="int token ids"):
            g.generate(bad, 2)
    with pytest.raises(TypeError, match="stop_tokens"):
        g.generate([1, 2], 2, stop_tokens=[2.0])
    assert list(g.generate(np.array([1, 2, 3]), 3)) == list(g.generate([1, 2, 3], 3))


def test_drop_in_unknown_method_is_executorch_error_and_key_error(rt):
    prog = drop_in.Runtime.get().load_program(model_path("add"))
    with pytest.raises(en.ExecutionError, match="unknown method 'nope'.*forward") as e:
        prog.load_method("nope")
    assert isinstance(e.value, KeyError) and isinstance(e.value, en.MethodNotFound)
    with pytest.raises(en.MethodNotFound, match="unknown method 'nope'"):
        rt.load_program(model_path("add")).signature("nope")


def test_runtime_pickles():
    assert pickle.loads(pickle.dumps(en.Runtime.get())) is en.Runtime.get()
    r = pickle.loads(pickle.dumps(en.Runtime(num_threads=2)))
    assert isinstance(r, en.Runtime) and r.num_threads == 2 and r is not en.Runtime.get()


def test_mmap_of_bundled_program_refused(rt):
    with pytest.raises(ValueError, match="bundled program .*mmap=True"):
        rt.load_program(f"{MODELS}/mlp_bundled.bpte", mmap=True)
    assert rt.load_program(f"{MODELS}/mlp_bundled.bpte").method_names


@pytest.mark.parametrize("name", ["mylib::" + "x" * 100_000 + ".out", "nonamespace", "a::", "::b", "a::b.c.d",
                                  "a::b c", "a::b\n", "a:b::c", "a::b.", "mylib::op\u00e9"],
                         ids=["100KB", "nonamespace", "noname", "nonamespace2", "twodots", "space", "newline",
                              "colon", "emptyoverload", "nonascii"])
def test_register_op_refuses_bad_names(name):
    with pytest.raises(ValueError, match="invalid operator name"):
        en.register_op(name, lambda *a: None)
    assert name not in en.registered_ops()


def test_register_op_name_types():
    with pytest.raises(TypeError):
        en.register_op(b"mylib::x.out", lambda *a: None)
    with pytest.raises(ValueError, match="NUL"):
        en.register_op("mylib::x\0.out", lambda *a: None)


def test_reset_waits_for_the_call_in_progress(rt):
    """Documented: reset() takes the Runtime's lock, so it waits for a call in progress on it
    (cancel() stops one first) and then resets the state."""
    op = "round3::wait.out"
    started, release = threading.Event(), threading.Event()

    def slow(x, out):
        started.set()
        release.wait(10)
        np.copyto(out, x)
    en.register_op(op, slow)
    try:
        from pte_build import F32, Program
        p = Program()
        x, o = p.tensor(F32, [4]), p.tensor(F32, [4], planned=True)
        p.call(p.op("round3::wait", "out"), [x, o])
        p.inputs, p.outputs = [x], [o]
        m = en.Runtime(num_threads=1).load_program(p.to_bytes()).load_method()
        t = threading.Thread(target=m, args=([np.ones(4, np.float32)],))
        t.start()
        assert started.wait(10)
        done = []
        r = threading.Thread(target=lambda: (m.reset(), done.append(1)))
        r.start()
        r.join(0.3)
        assert not done  # waiting for the call
        release.set()
        t.join(10)
        r.join(10)
        assert done
    finally:
        release.set()
        en.unregister_op(op)


def test_runtime_thread_count_range():
    for bad in (0, -1, 257, 2 ** 40, 2.0, True, "2"):
        with pytest.raises(ValueError, match="num_threads must be an int from 1 to 256"):
            en.Runtime(num_threads=bad)
    assert en.Runtime(num_threads=256).num_threads == 256


def test_prompt_ids_are_ascii_decimal():
    from executorch_numpy_runtime.tokenizer import IdTokenizer
    assert IdTokenizer.parse("1, 2 3") == [1, 2, 3]
    for bad in ("1_0", "+3", "-0", "\u0661\u0662", "1.0", "9" * 20, "x" * 10_000):
        with pytest.raises(ValueError, match="non-negative integers") as e:
            IdTokenizer.parse(bad)
        assert len(str(e.value)) < 200


def test_tiny_temperature_samples_the_argmax():
    from executorch_numpy_runtime.llm import sample
    logits = np.array([0.5, 3.0, 1.0, 2.9])
    rng = np.random.default_rng(0)
    with np.errstate(invalid="raise", divide="raise"):  # no NaN probabilities
        assert all(sample(logits, rng, temperature=t) == 1 for t in (1e-320, 1e-300, 1e-30))
