"""Issue #14 operators that a single torch-eager reference cannot check: in-place buffer updates
over successive calls (aten::copy_, aten::index_put_), random ops (by shape, range and
statistics), symbolic-size scalar ops at other sizes, and clean errors on bad inputs."""
import math

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import method_calls, method_inputs, model_path, reference


def test_kv_cache_state_over_successive_calls(rt):
    """index_put_ writes a cache row and copy_ a running state: each call sees the previous ones."""
    ref = reference("ops_kv_state")
    prog = rt.load_program(model_path("ops_kv_state"))
    ops = set(en.runtime_info()["operators"])
    assert {"aten::index_put_", "aten::copy_"} <= ops
    m = prog.load_method("forward")
    calls = list(method_calls(ref))
    assert len(calls) == 3
    for k, (ins, outs) in enumerate(calls):
        got = m(ins)
        assert len(got) == len(outs)
        for g, r in zip(got, outs):
            np.testing.assert_allclose(g, r, atol=1e-6, rtol=1e-6, err_msg=f"call {k}")


def test_random_ops_statistics(rt):
    """rand / randn / native_dropout follow their distributions; empty + fill gives the fill."""
    ref = reference("ops_random")
    m = rt.load_program(model_path("ops_random")).load_method("forward")
    x = method_inputs(ref, "forward")[0]
    u, n, d, mask, e = m([x])
    assert u.shape == (200, 50) and u.dtype == np.float32
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert n.shape == (100, 100) and abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03
    assert abs(np.mean(np.abs(n) < 1) - 0.6827) < 0.02
    kept = d != 0
    assert abs(kept.mean() - 0.7) < 0.05
    np.testing.assert_allclose(d[kept], x[kept] / 0.7, rtol=1e-6)
    assert mask.dtype == np.bool_ and mask.shape == x.shape and abs(mask.mean() - 0.5) < 0.05
    np.testing.assert_array_equal(e, np.full((4, 5), 3.0, np.float32))
    u2 = m([x])[0]
    assert not np.array_equal(u, u2)  # the generator advances between calls


@pytest.mark.parametrize("a,b,k", [(6, 2, 0), (7, 4, 3), (9, 9, 4), (8, 3, 1)])
def test_scalar_prims_at_other_sizes(rt, a, b, k):
    """sym_max / sym_min / sym_float / ceil / round (half to even) / trunc on the input sizes, and
    _local_scalar_dense reading the slice length from a tensor."""
    m = rt.load_program(model_path("ops_scalar_prims")).load_method("forward")
    rng = np.random.default_rng(a * 100 + b)
    x = rng.standard_normal((a, 3)).astype(np.float32)
    y = rng.standard_normal((b, 3)).astype(np.float32)
    z, c, r, t, s = m([x, y, np.array(k, dtype=np.int64)])
    f = a / 3.0
    np.testing.assert_allclose(z, np.full((max(a, b), min(a, b)), x.sum(), np.float32), rtol=1e-5)
    np.testing.assert_array_equal(c, np.ones(math.ceil(f), np.float32))
    np.testing.assert_array_equal(r, np.full(round(f * 2), 2, np.float32))
    np.testing.assert_array_equal(t, np.full(math.trunc(f * 2), 3, np.float32))
    np.testing.assert_array_equal(s, x[:k] * 2)


def test_map_loop_fills_rows_with_et_copy_index(rt):
    ref = reference("ops_map_loop")
    m = rt.load_program(model_path("ops_map_loop")).load_method("forward")
    xs, y = method_inputs(ref, "forward")
    for _ in range(2):  # the loop counter is reset for the next call
        np.testing.assert_allclose(m([xs, y])[0], xs * 2 + y, rtol=1e-6)


def test_bad_inputs_raise_execution_errors(rt):
    ref = reference("ops_views_extra")
    m = rt.load_program(model_path("ops_views_extra")).load_method("forward")
    ins = method_inputs(ref, "forward")
    ins[4] = np.array([1, 0, 3, 2, 4], dtype=np.int64)  # repeats sum to 10, output_size is 9
    with pytest.raises(en.ExecutionError, match="repeat_interleave"):
        m(ins)
    ref = reference("ops_quant_embed")
    q = rt.load_program(model_path("ops_quant_embed")).load_method("forward")
    ins = method_inputs(ref, "forward")
    ins[0] = ins[0].copy()
    ins[0][0, 0] = 10  # 10 rows
    with pytest.raises(en.ExecutionError, match="out of range"):
        q(ins)
