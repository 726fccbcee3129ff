"""Fused op chains (issue #29: RoPE / RMSNorm / SwiGLU fused where they sit between the 4-bit
linears; runtime/fused_calls.h): the ~35 portable instructions an ExecuTorch llama export leaves
per decoder layer run as three kernels, bit for bit what the instructions give. A chain is fused
only where no instruction between its first and last touches the memory it reads or writes
(the memory plan reuses a value's bytes after its last read); ETNP_FUSE_CHAINS=0 turns fusion
off, =decline makes every fused kernel decline so each chain's own instructions run at the place
the kernel would have."""
import os
from collections import Counter

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import model_path, reference
from pte_build import F32, T, Program

LLMS = ["llm_fp32_kv", "llm_fp32_sdpa", "llm_8da4w_kv", "llm_8da4w_sdpa", "llm_fp32_kv_static", "llm_fp32_nokv"]


def fused_events(m, inputs):
    return Counter(e.name for e in m.profile(inputs).events if e.name.startswith("etnp::fused_"))


def decode(name, threads):
    """The recorded steps' logits, one token a call where the program takes a position."""
    ref = reference(name)
    m = en.Runtime(num_threads=threads).load_program(model_path(name)).load_method("forward")
    out, i = [], 0
    while f"step_tokens:{i}" in ref:
        toks = ref[f"step_tokens:{i}"]
        if len(m.metadata.inputs) == 1:
            res = m([toks])
        else:
            pos = int(ref[f"step_pos:{i}"][0])
            for j, t in enumerate(toks[0]):
                res = m([np.array([[t]], np.int64), np.array([pos + j], np.int64)])
        out.append(np.array(res[0]))
        i += 1
    return m, out


@pytest.mark.parametrize("name", LLMS)
def test_llm_chains_fuse_and_give_the_same_bits(name, monkeypatch):
    got = {}
    for mode in ("0", "1", "decline"):
        monkeypatch.setenv("ETNP_FUSE_CHAINS", mode)
        for threads in (1, 2):
            m, got[mode, threads] = decode(name, threads)
        probe = [np.array([[5, 6, 7]], np.int64)] if len(m.metadata.inputs) == 1 else \
            [np.array([[5]], np.int64), np.array([3], np.int64)]
        seen = fused_events(m, probe)
        if mode == "1":  # every layer's norms and SwiGLU (and where the custom SDPA leaves room, RoPE)
            assert seen["etnp::fused_rms_norm"] >= 4 and seen["etnp::fused_swiglu"] >= 2, seen
            if "sdpa" in name:
                assert seen["etnp::fused_rope_pairs"] >= 4, seen
        else:  # (declined kernels are not events: their instructions are)
            assert not seen, (mode, seen)
    for key, logits in got.items():
        for i, (a, b) in enumerate(zip(got["0", 1], logits)):
            assert np.array_equal(a, b), (name, key, i)


def rope_program(reuse):
    """x (planned: x = inp * 1) [1, 2, 3, 4, 2] through ExecuTorch llama's apply_rotary_emb spelled
    as slices, squeezes, four multiplies, sub, add, unsqueezes and a cat; between the slices (x's
    last read) and the cat, z = inp * 2 and z2 = (inp * 3) * 1 are computed. REUSE: "input" plans
    z in x's bytes (x is dead by then), "input+result" also inp * 3 in the result's bytes (dead
    before the cat writes there) - both legal plans. Outputs (rope(x), z, z2)."""
    p = Program()
    ops = {n: p.op(n, o) for n, o in [("aten::mul", "out"), ("aten::slice_copy", "Tensor_out"),
                                     ("aten::squeeze_copy", "dims_out"), ("aten::sub", "out"),
                                     ("aten::add", "out"), ("aten::unsqueeze_copy", "out"), ("aten::cat", "out")]}
    shape, half = [1, 2, 3, 4, 2], [1, 2, 3, 4]
    rng = np.random.default_rng(7)
    cos, sin = rng.standard_normal((2, 1, 2, 1, 4), dtype=np.float32)
    inp = p.tensor(F32, shape)
    one = p.tensor(F32, [1], const=np.float32(1).tobytes())
    two = p.tensor(F32, [1], const=np.float32(2).tobytes())
    c = p.tensor(F32, [1, 2, 1, 4], const=cos.tobytes())
    s = p.tensor(F32, [1, 2, 1, 4], const=sin.tobytes())
    x = p.tensor(F32, shape, planned=True)
    p.call(ops["aten::mul"], [inp, one, x, x])
    halves = []
    for k in range(2):
        sl = p.tensor(F32, half + [1], planned=True)
        p.call(ops["aten::slice_copy"], [x, p.int(4), p.int(k), p.int(k + 1), p.int(1), sl, sl])
        halves.append(sl)
    z = p.tensor(F32, shape, planned=True)
    p.call(ops["aten::mul"], [inp, two, z, z])
    three = p.tensor(F32, [1], const=np.float32(3).tobytes())
    w, z2 = p.tensor(F32, shape, planned=True), p.tensor(F32, shape, planned=True)
    p.call(ops["aten::mul"], [inp, three, w, w])
    p.call(ops["aten::mul"], [w, one, z2, z2])
    sq = []
    for sl in halves:
        t = p.tensor(F32, half, planned=True)
        p.call(ops["aten::squeeze_copy"], [sl, p.int_list([4]), t, t])
        sq.append(t)
    prods = {}
    for key, (a, b) in {"x0c": (sq[0], c), "x0s": (sq[0], s), "x1s": (sq[1], s), "x1c": (sq[1], c)}.items():
        t = p.tensor(F32, half, planned=True)
        p.call(ops["aten::mul"], [a, b, t, t])
        prods[key] = t
    re_, im = p.tensor(F32, half, planned=True), p.tensor(F32, half, planned=True)
    p.call(ops["aten::sub"], [prods["x0c"], prods["x1s"], p.int(1), re_, re_])
    p.call(ops["aten::add"], [prods["x0s"], prods["x1c"], p.int(1), im, im])
    parts = []
    for t in (re_, im):
        u = p.tensor(F32, half + [1], planned=True)
        p.call(ops["aten::unsqueeze_copy"], [t, p.int(4), u, u])
        parts.append(u)
    lst = p._add(10, T(f0=("vec", "i32", parts)))
    out = p.tensor(F32, shape, planned=True)
    p.call(ops["aten::cat"], [lst, p.int(-1), out, out])
    alloc = lambda t: p.values[t].fields[1].fields  # (a tensor's allocation: field 6)
    if "input" in reuse:
        alloc(z)[6] = alloc(x)[6]
    if "result" in reuse:
        alloc(w)[6] = alloc(out)[6]
    p.inputs, p.outputs = [inp], [out, z, z2]
    return p.to_bytes(), cos, sin


@pytest.mark.parametrize("reuse", ["", "input", "input+result"])
def test_a_chain_runs_where_its_memory_allows_or_is_not_fused(tmp_path, reuse):
    data, cos, sin = rope_program(reuse)
    path = tmp_path / "rope.pte"
    path.write_bytes(data)
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 4, 2), dtype=np.float32)
    for mode in ("1", "decline"):
        os.environ["ETNP_FUSE_CHAINS"] = mode
        try:
            m = en.Runtime(num_threads=1).load_program(str(path)).load_method("forward")
        finally:
            del os.environ["ETNP_FUSE_CHAINS"]
        out, z, z2 = m([x])
        x0, x1 = x[..., 0], x[..., 1]
        want = np.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=-1)
        assert np.array_equal(np.asarray(out), want), (reuse, mode)
        assert np.array_equal(np.asarray(z), x * 2) and np.array_equal(np.asarray(z2), x * 3), (reuse, mode)
    # fused at the cat where nothing between touches its memory; with x's bytes reused meanwhile,
    # at the slices (its inputs still there, its result's bytes untouched until the cat); with
    # the result's bytes holding inp * 3 meanwhile too, nowhere: the instructions run as they are
    m = en.Runtime(num_threads=1).load_program(str(path)).load_method("forward")
    assert fused_events(m, [x])["etnp::fused_rope_pairs"] == (0 if "result" in reuse else 1)


def test_a_static_view_written_inside_a_chain_is_read_after_it():
    """out = (g * sigmoid(g)) * u where u is a static view - a planned tensor no instruction writes,
    sharing the bytes of w = inp * 3, which is computed between the sigmoid and the last multiply
    (as ExecuTorch plans a view onto its base's memory). The chain must not run before w is
    written (a portable llama's SwiGLU, whose up projection's result comes in through such a view,
    once ran at the sigmoid and read the bytes before the up projection wrote them)."""
    p = Program()
    mul, sig = p.op("aten::mul", "out"), p.op("aten::sigmoid", "out")
    shape = [2, 8]
    inp = p.tensor(F32, shape)
    one = p.tensor(F32, [1], const=np.float32(1).tobytes())
    three = p.tensor(F32, [1], const=np.float32(3).tobytes())
    g, sg, m = (p.tensor(F32, shape, planned=True) for _ in range(3))
    w, u, out = p.tensor(F32, shape, planned=True), p.tensor(F32, [16], planned=True), p.tensor(F32, shape, planned=True)
    p.values[u].fields[1].fields[6] = p.values[w].fields[1].fields[6]  # u: w's bytes, another shape
    p.values[u].fields[1].fields[2] = ("vec", "i32", shape)
    p.values[u].fields[1].fields[3] = ("vec", "u8", [0, 1])
    p.call(mul, [inp, one, g, g])
    p.call(sig, [g, sg, sg])
    p.call(mul, [g, sg, m, m])
    p.call(mul, [inp, three, w, w])
    p.call(mul, [m, u, out, out])
    p.inputs, p.outputs = [inp], [out]
    x = np.random.default_rng(5).standard_normal(shape, dtype=np.float32)
    want = None
    for mode in ("0", "1", "decline"):
        os.environ["ETNP_FUSE_CHAINS"] = mode
        try:
            mm = en.Runtime(num_threads=1).load_program(p.to_bytes()).load_method("forward")
        finally:
            del os.environ["ETNP_FUSE_CHAINS"]
        got = np.asarray(mm([x])[0])
        if want is None:
            want = got
            sgm = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
            np.testing.assert_allclose(got, x * sgm * (x * 3), rtol=1e-6)
        assert np.array_equal(got, want), mode


def test_a_chain_whose_factor_is_its_own_value_is_not_fused():
    """(g * sigmoid(g)) * sigmoid(g): the SwiGLU pattern's second factor is the chain's own sigmoid,
    which the fused kernel would never write - the instructions run as they are."""
    p = Program()
    mul, sig = p.op("aten::mul", "out"), p.op("aten::sigmoid", "out")
    shape = [3, 8]
    inp = p.tensor(F32, shape)
    one = p.tensor(F32, [1], const=np.float32(1).tobytes())
    g, sg, m, out = (p.tensor(F32, shape, planned=True) for _ in range(4))
    p.call(mul, [inp, one, g, g])
    p.call(sig, [g, sg, sg])
    p.call(mul, [g, sg, m, m])
    p.call(mul, [m, sg, out, out])
    p.inputs, p.outputs = [inp], [out]
    m_ = en.Runtime(num_threads=1).load_program(p.to_bytes()).load_method("forward")
    x = np.random.default_rng(9).standard_normal(shape, dtype=np.float32)
    got = np.asarray(m_([x])[0])
    sgm = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    np.testing.assert_allclose(got, x * sgm * sgm, rtol=1e-6)
    assert not fused_events(m_, [x])
