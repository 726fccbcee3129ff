"""llama::custom_sdpa's grouped-query kernel (native/src/llm/attention.cpp, attention_block*.cpp):
scores by blocks of 256 keys, softmax by row, value sums by 32-float chunks of the head dimension,
the query heads of a KV head together. Checked against a float64 numpy reference across head
counts and group sizes, head dims with and without a vector tail, key counts on and off the block
size, start positions, masks that blank whole blocks, 1 and 2 threads (bit-identical), and every
CPU path."""
import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import run_with_cpu
from pte_build import F32, Program

BLOCK = 256  # keys per score task in attention.cpp


def ref_sdpa(q, k, v, start_pos, causal, mask=None):
    """q [B,S,Hq,D]; k/v [B,M,Hkv,D] -> [B,S,Hq,D] float64; a row that sees no key gives zeros."""
    B, S, Hq, D = q.shape
    rep = Hq // k.shape[2]
    n = k.shape[1] if mask is not None else start_pos + S
    out = np.zeros(q.shape)
    for b in range(B):
        for h in range(Hq):
            kk, vv = k[b, :n, h // rep].astype(np.float64), v[b, :n, h // rep].astype(np.float64)
            for i in range(S):
                sc = kk @ q[b, i, h].astype(np.float64) / np.sqrt(D)
                if mask is not None:
                    sc = sc + mask[i, :n]
                if causal:
                    sc[start_pos + i + 1:] = -np.inf
                if not np.isfinite(sc.max()):
                    continue
                p = np.exp(sc - sc.max())
                out[b, i, h] = (p / p.sum()) @ vv
    return out


def sdpa_method(q_shape, kv_shape, causal=True, mask=False, threads=1):
    p = Program()
    q, k, v = (p.tensor(F32, s, planned=True) for s in (q_shape, kv_shape, kv_shape))
    pos = p.int(0)
    m = p.tensor(F32, [q_shape[1], kv_shape[1]], planned=True) if mask else p.none()
    o = p.tensor(F32, q_shape, planned=True)
    p.call(p.op("llama::custom_sdpa", "out"), [q, k, v, pos, m, p.double(0.0), p.bool(causal), p.none(), o, o])
    p.inputs, p.outputs = [q, k, v, pos] + ([m] if mask else []), [o]
    return en.Runtime(num_threads=threads).load_program(p.to_bytes()).load_method("forward")


def rnd(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


CASES = [  # B, S, Hq, Hkv, D, M, start
    (1, 1, 9, 3, 64, 2048, 1952),   # SmolLM-135M's decode step at a long context (3 query heads a KV head)
    (1, 1, 8, 1, 20, 700, 511),     # 8 query heads on one KV head, head_dim with a vector tail, 512 keys
    (1, 1, 4, 4, 8, 300, 255),      # no grouping, 256 keys: exactly one block
    (1, 1, 6, 2, 16, 300, 256),     # 257 keys: a block of one key
    (2, 3, 4, 2, 64, 600, 510),     # batch 2, a causal chunk whose rows straddle a block boundary
    (1, 5, 12, 4, 24, 1100, 1020),  # 3 query heads a KV head, the rows ending in the fifth block
    (1, 40, 4, 2, 32, 64, 3),       # a prefill chunk: one block, many rows
]


@pytest.mark.parametrize("B,S,Hq,Hkv,D,M,start", CASES)
def test_blocked_sdpa_matches_numpy(B, S, Hq, Hkv, D, M, start):
    rng = np.random.default_rng(D * 7 + M + start)
    q, k, v = rnd(rng, B, S, Hq, D), rnd(rng, B, M, Hkv, D), rnd(rng, B, M, Hkv, D)
    want = ref_sdpa(q, k, v, start, True)
    one = sdpa_method(q.shape, k.shape)([q, k, v, start])[0]
    np.testing.assert_allclose(one, want, atol=2e-5, rtol=1e-4)
    two = sdpa_method(q.shape, k.shape, threads=2)([q, k, v, start])[0]
    np.testing.assert_array_equal(two, one)  # fixed blocks, fixed merge order: thread count changes no bit


def test_blocked_sdpa_sharp_scores_across_blocks():
    """Scores far apart across blocks (one block's keys dominating, the others' weights underflowing
    to 0 and skipped in the value sums)."""
    rng = np.random.default_rng(5)
    B, S, Hq, Hkv, D, M = 1, 1, 6, 2, 32, 900
    q, k, v = rnd(rng, B, S, Hq, D), rnd(rng, B, M, Hkv, D), rnd(rng, B, M, Hkv, D)
    q *= 4
    k[:, 600:640] *= 6  # a block's keys with large scores
    want = ref_sdpa(q, k, v, M - 1, True)
    out = sdpa_method(q.shape, k.shape)([q, k, v, M - 1])[0]
    np.testing.assert_allclose(out, want, atol=2e-5, rtol=1e-4)


def test_blocked_sdpa_mask_blanking_whole_blocks():
    rng = np.random.default_rng(6)
    B, S, Hq, Hkv, D, M = 1, 3, 6, 3, 16, 800
    q, k, v = rnd(rng, B, S, Hq, D), rnd(rng, B, M, Hkv, D), rnd(rng, B, M, Hkv, D)
    mask = rng.standard_normal((S, M)).astype(np.float32)
    mask[0, :BLOCK] = -np.inf        # row 0: its first block masked whole
    mask[1, BLOCK:] = -np.inf        # row 1: only the first block counts
    mask[2, :] = -np.inf             # row 2: nothing to attend -> zeros
    out = sdpa_method(q.shape, k.shape, causal=False, mask=True)([q, k, v, 0, mask])[0]
    want = ref_sdpa(q, k, v, 0, False, mask=mask)
    np.testing.assert_allclose(out, want, atol=2e-5, rtol=1e-4)
    assert np.all(out[0, 2] == 0)


def test_blocked_sdpa_nan_propagates():
    rng = np.random.default_rng(7)
    q, k, v = rnd(rng, 1, 1, 4, 16), rnd(rng, 1, 600, 2, 16), rnd(rng, 1, 600, 2, 16)
    v[0, 300, 0, 3] = np.nan  # a value of KV head 0 in the second block
    out = sdpa_method(q.shape, k.shape)([q, k, v, 599])[0]
    assert np.all(np.isnan(out[0, 0, :2, 3]))  # query heads 0 and 1 read KV head 0
    assert np.all(np.isfinite(out[0, 0, 2:]))


PATH_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import executorch_numpy_runtime as en
from test_sdpa_blocked import CASES, ref_sdpa, rnd, sdpa_method
for (B, S, Hq, Hkv, D, M, start) in CASES:
    rng = np.random.default_rng(D * 7 + M + start)
    q, k, v = rnd(rng, B, S, Hq, D), rnd(rng, B, M, Hkv, D), rnd(rng, B, M, Hkv, D)
    out = sdpa_method(q.shape, k.shape, threads=2)([q, k, v, start])[0]
    np.testing.assert_allclose(out, ref_sdpa(q, k, v, start, True), atol=2e-5, rtol=1e-4)
print("cpu=" + en.runtime_info()["cpu_features"])
print("ok")
"""


@pytest.mark.parametrize("cpu", ["generic", "avx2"])
def test_blocked_sdpa_every_cpu_path(cpu):
    r = run_with_cpu(cpu, PATH_SCRIPT)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
