"""The LLM custom-op kernels (native/src/llm/) one op at a time, in hand-made programs, against
numpy references of ExecuTorch's semantics (extension/llm/custom_ops): llama::custom_sdpa,
llama::sdpa_with_kv_cache, llama::update_cache, llama::update_cache_with_indices."""
import numpy as np
import pytest

import executorch_numpy_runtime as en
from pte_build import F32, I32, I64, Program


def ref_sdpa(q, k, v, start_pos, causal, mask=None, scale=None):
    """q [B,S,Hq,D]; k/v [B,M,Hkv,D] caches -> [B,S,Hq,D] (float64)."""
    B, S, Hq, D = q.shape
    rep = Hq // k.shape[2]
    n = k.shape[1] if mask is not None else start_pos + S
    scale = 1 / np.sqrt(D) if scale is None else scale
    out = np.zeros(q.shape)
    for b in range(B):
        for h in range(Hq):
            kk, vv = k[b, :n, h // rep].astype(np.float64), v[b, :n, h // rep].astype(np.float64)
            for i in range(S):
                sc = kk @ q[b, i, h].astype(np.float64) * scale
                if mask is not None:
                    sc = sc + mask[i, :n]
                if causal:
                    sc[start_pos + i + 1:] = -np.inf
                p = np.exp(sc - sc.max())
                out[b, i, h] = (p / p.sum()) @ vv
    return out


def sdpa_method(q_shape, kv_shape, causal=True, mask=False, scale=None, dtype=F32):
    p = Program()
    q, k, v = (p.tensor(dtype, s, planned=True) for s in (q_shape, kv_shape, kv_shape))
    pos = p.int(0)
    m = p.tensor(F32, [q_shape[1], kv_shape[1]], planned=True) if mask else p.none()
    o = p.tensor(dtype, q_shape, planned=True)
    sc = p.double(scale) if scale is not None else p.none()
    p.call(p.op("llama::custom_sdpa", "out"), [q, k, v, pos, m, p.double(0.0), p.bool(causal), sc, o, o])
    p.inputs, p.outputs = [q, k, v, pos] + ([m] if mask else []), [o]
    return en.Runtime.get().load_program(p.to_bytes()).load_method("forward")


def rnd(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("B,S,Hq,Hkv,D,M,start", [
    (1, 1, 4, 2, 16, 32, 9),     # decode, grouped-query attention
    (1, 7, 4, 4, 8, 32, 0),      # prefill
    (2, 5, 6, 2, 12, 20, 15),    # batch 2, a chunk after earlier positions, up to the end of the cache
    (1, 40, 2, 1, 64, 64, 3),    # enough rows for the thread pool
])
def test_custom_sdpa_causal(B, S, Hq, Hkv, D, M, start):
    rng = np.random.default_rng(S + start)
    q, k, v = rnd(rng, B, S, Hq, D), rnd(rng, B, M, Hkv, D), rnd(rng, B, M, Hkv, D)
    out = sdpa_method(q.shape, k.shape)([q, k, v, start])[0]
    np.testing.assert_allclose(out, ref_sdpa(q, k, v, start, True), atol=2e-5, rtol=1e-4)


def test_custom_sdpa_not_causal_mask_and_scale():
    rng = np.random.default_rng(1)
    q, k, v = rnd(rng, 1, 3, 2, 8), rnd(rng, 1, 10, 2, 8), rnd(rng, 1, 10, 2, 8)
    out = sdpa_method(q.shape, k.shape, causal=False, scale=0.3)([q, k, v, 4])[0]
    np.testing.assert_allclose(out, ref_sdpa(q, k, v, 4, False, scale=0.3), atol=2e-5, rtol=1e-4)
    mask = np.where(rng.random((3, 10)) < 0.3, -np.inf, rng.standard_normal((3, 10))).astype(np.float32)
    mask[:, 0] = 0  # every row attends something
    out = sdpa_method(q.shape, k.shape, causal=False, mask=True)([q, k, v, 0, mask])[0]
    np.testing.assert_allclose(out, ref_sdpa(q, k, v, 0, False, mask=mask), atol=2e-5, rtol=1e-4)
    mask[1] = -np.inf  # a row that sees nothing: zeros
    out = sdpa_method(q.shape, k.shape, causal=False, mask=True)([q, k, v, 0, mask])[0]
    assert np.all(out[0, 1] == 0) and np.all(np.isfinite(out))


def test_custom_sdpa_bad_inputs():
    rng = np.random.default_rng(2)
    q, k = rnd(rng, 1, 2, 4, 8), rnd(rng, 1, 16, 2, 8)
    m = sdpa_method(q.shape, k.shape)
    with pytest.raises(en.ExecutionError, match="start position 15 \\+ 2 query positions exceed"):
        m([q, k, k, 15])
    with pytest.raises(en.ExecutionError, match="negative"):
        m([q, k, k, -1])
    np.testing.assert_allclose(m([q, k, k, 14])[0], ref_sdpa(q, k, k, 14, True), atol=2e-5, rtol=1e-4)
    with pytest.raises(en.ExecutionError, match="multiple of key heads"):
        sdpa_method((1, 1, 3, 8), (1, 16, 2, 8))([rnd(rng, 1, 1, 3, 8), k, k, 0])
    with pytest.raises(en.ExecutionError, match="head_dim"):
        sdpa_method((1, 1, 4, 4), (1, 16, 2, 8))([rnd(rng, 1, 1, 4, 4), k, k, 0])
    with pytest.raises(en.ExecutionError, match="cannot both be set"):
        sdpa_method(q.shape, k.shape, causal=True, mask=True)([q, k, k, 0, np.zeros((2, 16), np.float32)])
    with pytest.raises(en.ExecutionError, match="float32"):
        sdpa_method((1, 1, 2, 2), (1, 4, 2, 2), dtype=I32)(
            [np.zeros((1, 1, 2, 2), np.int32), np.zeros((1, 4, 2, 2), np.int32), np.zeros((1, 4, 2, 2), np.int32), 0])


def cache_method(value_shape, cache_shape, op="update_cache", dtype=F32):
    """The cache is program state (a mutable buffer, zeros at first); returns (method, output = cache)."""
    p = Program()
    nbytes = int(np.prod(cache_shape)) * (8 if dtype == I64 else 4)
    val = p.tensor(dtype, value_shape, planned=True)
    cache = p.tensor(dtype, cache_shape, mutable=bytes(nbytes))
    pos = p.int(0)
    o = p.tensor(dtype, [1], planned=True)
    if op == "update_cache":
        p.call(p.op("llama::update_cache", "out"), [val, cache, pos, o, o])
        p.inputs = [val, pos]
    else:
        idx = p.tensor(I64, value_shape[:2], planned=True)
        p.call(p.op("llama::update_cache_with_indices", "out"), [val, cache, pos, idx, o, o])
        p.inputs = [val, pos, idx]
    p.outputs = [cache]
    return en.Runtime.get().load_program(p.to_bytes()).load_method("forward")


def test_update_cache_writes_rows_and_keeps_state():
    rng = np.random.default_rng(3)
    m = cache_method((2, 3, 2, 4), (2, 8, 2, 4))
    want = np.zeros((2, 8, 2, 4), np.float32)
    a, b = rnd(rng, 2, 3, 2, 4), rnd(rng, 2, 3, 2, 4)
    want[:, 0:3] = a
    np.testing.assert_array_equal(m([a, 0])[0], want)
    want[:, 5:8] = b
    np.testing.assert_array_equal(m([b, 5])[0], want)  # the state kept rows 0..2
    with pytest.raises(en.ExecutionError, match="start position 6 \\+ 3 new positions exceed the cache's 8"):
        m([b, 6])
    with pytest.raises(en.ExecutionError, match="out of range"):
        m([b, 8])
    with pytest.raises(en.ExecutionError, match="out of range"):
        m([b, -2])
    np.testing.assert_array_equal(m([a, 0])[0][:, 5:8], b)  # nothing was written by the failed calls
    m.reset()
    after = m([a, 0])[0]
    np.testing.assert_array_equal(after[:, :3], a)
    assert not after[:, 3:].any()  # the reset cleared rows 5..7


def test_update_cache_shape_and_dtype_checks():
    with pytest.raises(en.ExecutionError, match="batch, heads and head_dim must match"):
        cache_method((1, 2, 3, 4), (1, 8, 2, 4))([np.zeros((1, 2, 3, 4), np.float32), 0])
    with pytest.raises(en.ExecutionError, match="4-D"):
        cache_method((2, 4), (1, 8, 2, 4))([np.zeros((2, 4), np.float32), 0])


def test_update_cache_with_indices():
    rng = np.random.default_rng(4)
    m = cache_method((1, 3, 2, 2), (1, 6, 2, 2), op="with_indices")
    val = rnd(rng, 1, 3, 2, 2)
    want = np.zeros((1, 6, 2, 2), np.float32)
    want[0, [4, 0, 2]] = val[0]
    np.testing.assert_array_equal(m([val, 0, np.array([[4, 0, 2]], np.int64)])[0], want)
    with pytest.raises(en.ExecutionError, match="index 6 is out of range"):
        m([val, 0, np.array([[1, 6, 2]], np.int64)])
    np.testing.assert_array_equal(m([val * 0 + 1, 0, np.array([[5, 5, 5]], np.int64)])[0][0, 1], 0)


def test_sdpa_with_kv_cache():
    """sdpa_with_kv_cache writes k/v into its caches (state) at start_pos, then attends them."""
    rng = np.random.default_rng(5)
    B, Hq, Hkv, D, M = 1, 4, 2, 8, 12
    p = Program()
    q = p.tensor(F32, [B, 3, Hq, D], planned=True)
    k = p.tensor(F32, [B, 3, Hkv, D], planned=True)
    v = p.tensor(F32, [B, 3, Hkv, D], planned=True)
    kc = p.tensor(F32, [B, M, Hkv, D], mutable=bytes(B * M * Hkv * D * 4))
    vc = p.tensor(F32, [B, M, Hkv, D], mutable=bytes(B * M * Hkv * D * 4))
    pos, seq = p.int(0), p.int(3)
    o = p.tensor(F32, [B, 3, Hq, D], planned=True)
    p.call(p.op("llama::sdpa_with_kv_cache", "out"),
           [q, k, v, kc, vc, pos, seq, p.none(), p.double(0.0), p.bool(True), p.none(), o, o])
    p.inputs, p.outputs = [q, k, v, pos, seq], [o]
    m = en.Runtime.get().load_program(p.to_bytes()).load_method("forward")
    K, V = np.zeros((B, M, Hkv, D), np.float32), np.zeros((B, M, Hkv, D), np.float32)
    for start in (0, 3, 6):
        qq, kk, vv = rnd(rng, B, 3, Hq, D), rnd(rng, B, 3, Hkv, D), rnd(rng, B, 3, Hkv, D)
        K[:, start:start + 3], V[:, start:start + 3] = kk, vv
        out = m([qq, kk, vv, start, 3])[0]
        np.testing.assert_allclose(out, ref_sdpa(qq, K, V, start, True), atol=2e-5, rtol=1e-4)
    with pytest.raises(en.ExecutionError, match="seq_len 2 does not match"):
        m([qq, kk, vv, 0, 2])
    with pytest.raises(en.ExecutionError, match="exceed"):
        m([qq, kk, vv, 10, 3])
