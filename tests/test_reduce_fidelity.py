"""mean.out and sum.IntList_out of float32 give ExecuTorch 1.3.1's bits (checked against the
reference runtime on programs of these shapes): a mean (the portable kernel) sums each output in
float32, element after element in the reduced dims' order, from 0, then divides by (float)count;
a sum over one innermost dim (the optimized kernel) adds element j into lane j % 8 while whole
eights remain, then the lanes in order, then the rest one by one; any other sum is the portable
kernel's running sum. More accurate sums (in double) are other floats: a static-int8 ShuffleNetV2
requantizes its mean, and 5 of its 100 logits moved off the reference runtime's. float32 running
sums are numpy's cumsum (sequential), not its sum (pairwise)."""

import numpy as np
import pytest

import executorch_numpy_runtime as en
from pte_build import F32, Program


def reduce_program(op, shape, dims, keepdim):
    p = Program()
    k = p.op(op, "out" if op == "aten::mean" else "IntList_out")
    x = p.tensor(F32, list(shape))
    out_shape = [1 if i in dims else d for i, d in enumerate(shape)] if keepdim else \
        [d for i, d in enumerate(shape) if i not in dims]
    o = p.tensor(F32, out_shape, planned=True)
    p.call(k, [x, p.int_list(list(dims)), p.bool(keepdim), p.none(), o, o])
    p.inputs, p.outputs = [x], [o]
    return p.to_bytes()


def expected(x, dims, mean):
    """float32 running sums over the reduced dims (moved last, in their order), from 0 - or, for a
    sum over the one innermost dim, the 8-lane order"""
    kept = [i for i in range(x.ndim) if i not in dims]
    t = np.transpose(x, kept + list(dims)).reshape([x.shape[i] for i in kept] + [-1])
    if mean or len(dims) != 1 or dims[0] != x.ndim - 1:
        s = np.cumsum(t, axis=-1, dtype=np.float32)[..., -1]
        return s / np.float32(t.shape[-1]) if mean else s
    n = t.shape[-1] // 8 * 8
    lanes = np.cumsum(t[..., :n].reshape(t.shape[:-1] + (-1, 8)), axis=-2, dtype=np.float32)[..., -1, :] if n else \
        np.zeros(t.shape[:-1] + (8,), np.float32)
    rest = np.concatenate([lanes, t[..., n:]], axis=-1)  # the lanes in order, then the rest
    return np.cumsum(rest, axis=-1, dtype=np.float32)[..., -1]


@pytest.mark.parametrize("op", ["aten::mean", "aten::sum"])
@pytest.mark.parametrize("shape,dims", [((37, 300), (1,)),        # contiguous rows (the rows' path)
                                         ((6, 5), (1,)),           # rows shorter than the lanes
                                         ((5, 64, 9), (1,)),       # strided (the general path)
                                         ((3, 16, 4, 4), (2, 3))])  # a pooling's mean over H, W
def test_float32_reductions_sum_as_executorch_portable(tmp_path, op, shape, dims):
    path = tmp_path / "reduce.pte"
    path.write_bytes(reduce_program(op, shape, dims, keepdim=False))
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * rng.uniform(0.1, 100, shape)).astype(np.float32)  # (magnitudes apart)
    want = expected(x, dims, op == "aten::mean")
    for threads in (1, 2):
        got = np.asarray(en.Runtime(num_threads=threads).load_program(str(path)).load_method("forward")([x])[0])
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"{op} over {dims} of {shape}, {threads} thread(s)")
    # (a double-precision sum, rounded once, is another float on these long rows: the check can fail)
    exact = np.sum(np.transpose(x, [i for i in range(x.ndim) if i not in dims] + list(dims)).reshape(want.shape + (-1,)),
                   axis=-1, dtype=np.float64)
    if op == "aten::mean":
        exact = exact / np.prod([shape[d] for d in dims])
    if x.size // want.size >= 16:
        assert (exact.astype(np.float32) != want).any()
