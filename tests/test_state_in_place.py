"""A state buffer's functional update runs in place (issues #29 item 3, #32): ExecuTorch exports
`cache[idx] = v` on a registered buffer as index_put.out(cache, [idx], v, out=T), the method reads
T, and copy_(cache, T) writes it back at the end. The runtime makes T an alias of the cache, so a
call writes the new rows only - not a whole copy of the cache into T and back - and T's planned
memory is never touched. The results are those of the functional program."""
import gc
import sys

import numpy as np
import pytest

import executorch_numpy_runtime as en
from pte_build import F32, I64, T, Program
from test_planned_pages import rss_bytes

H, D = 8, 64  # a cache row: 2 KiB


def opt_tensor_list(p, items):
    return p._add(11, T(f0=("vec", "i32", list(items))))


def cache_program(positions, reads=8, extra_reader=False):
    """forward(rows [4, H, D], idx int64 [4], ridx int64 [reads]) -> T[ridx], T = the cache with
    rows at idx (index_put.out), then copy_(cache, T). extra_reader: another op also reads the
    cache itself after the update (the rewrite must then not apply: it would see the new rows)."""
    p = Program()
    rows = p.tensor(F32, [4, H, D], planned=True)
    idx = p.tensor(I64, [4], planned=True)
    ridx = p.tensor(I64, [reads], planned=True)
    cache = p.tensor(F32, [positions, H, D], mutable=bytes(positions * H * D * 4))
    t = p.tensor(F32, [positions, H, D], planned=True)
    out = p.tensor(F32, [reads, H, D], planned=True)
    acc, nb, zero = p.bool(False), p.bool(False), p.int(0)
    p.call(p.op("aten::index_put", "out"), [cache, opt_tensor_list(p, [idx]), rows, acc, t, t])
    p.call(p.op("aten::index_select", "out"), [t, zero, ridx, out, out])
    outputs = [out]
    if extra_reader:
        old = p.tensor(F32, [reads, H, D], planned=True)
        p.call(p.op("aten::index_select", "out"), [cache, zero, ridx, old, old])
        outputs.append(old)
    p.call(p.op("aten::copy_", ""), [cache, t, nb, cache])
    p.inputs = [rows, idx, ridx]
    p.outputs = outputs
    return p.to_bytes()


def expected_calls(positions, calls, reads):
    cache = np.zeros((positions, H, D), np.float32)
    for rows, idx, ridx in calls:
        before = cache[ridx].copy()
        cache[idx] = rows
        yield cache[ridx].copy(), before


def make_calls(positions, reads, n=4, seed=0):
    rng = np.random.default_rng(seed)
    calls = []
    for k in range(n):
        idx = rng.choice(positions, 4, replace=False).astype(np.int64)
        ridx = np.concatenate([idx, rng.choice(positions, reads - 4)]).astype(np.int64)
        if k:  # read back rows of the calls before too: the state persists
            ridx[-1] = calls[0][1][0]
        calls.append((rng.standard_normal((4, H, D)).astype(np.float32), idx, ridx))
    return calls


@pytest.mark.parametrize("extra_reader", [False, True])
def test_results_are_those_of_the_functional_program(extra_reader):
    positions, reads = 64, 8
    m = en.Runtime.get().load_program(cache_program(positions, reads, extra_reader)).load_method("forward")
    calls = make_calls(positions, reads)
    for (rows, idx, ridx), (want, before) in zip(calls, expected_calls(positions, calls, reads)):
        got = m([rows, idx, ridx])
        np.testing.assert_array_equal(got[0], want)
        if extra_reader:  # the cache itself, read before the copy_ back: still the old rows
            np.testing.assert_array_equal(got[1], before)
    m.reset()
    rows, idx, ridx = calls[0]
    want, _ = next(expected_calls(positions, [calls[0]], reads))
    np.testing.assert_array_equal(m([rows, idx, ridx])[0], want)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="resident pages read from /proc (Linux)")
@pytest.mark.parametrize("extra_reader", [False, True])
def test_a_call_touches_the_new_rows_not_the_whole_cache(extra_reader):
    positions = 16384
    nbytes = positions * H * D * 4  # 32 MiB of cache, and as much again for T
    rt = en.Runtime(num_threads=1)
    m = rt.load_program(cache_program(positions, 8, extra_reader)).load_method("forward")
    gc.collect()  # (PyPy frees the program's bytes object late: not during the calls below)
    before = rss_bytes()  # (after loading: the calls' pages alone)
    for rows, idx, ridx in make_calls(positions, 8, n=3):
        m([rows, idx, ridx])
    grown = rss_bytes() - before
    if extra_reader:  # not rewritten: T is the cache's copy, written whole by every call
        assert grown > nbytes, grown
    else:  # in place: a few pages of the cache (the bound above shows the functional cost)
        assert grown < nbytes // 8, grown
