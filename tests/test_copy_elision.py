"""Copies that move no byte (runtime/copy_elision.cpp): clone, unsqueeze / squeeze / view copies,
and expand / permute copies that leave every element in place at run time, made views of their
input's bytes where the memory plan allows it - nothing between the copy and the last read of
its result writes where the input's bytes are, and the result has no reader the view would
miss. ETNP_ELIDE_COPIES=0 runs every copy; the results are the same bits either way."""
import os

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import model_path
from pte_build import F32, I32, Program
from test_fused_chains import LLMS, decode


def load(data, elide=True):
    os.environ["ETNP_ELIDE_COPIES"] = "1" if elide else "0"
    try:
        return en.Runtime(num_threads=1).load_program(data).load_method("forward")
    finally:
        del os.environ["ETNP_ELIDE_COPIES"]


def elided(m, inputs):
    return sum(e.name == "etnp::elided_copy" for e in m.profile(inputs).events)


def alloc(p, t):
    return p.values[t].fields[1].fields  # (a tensor's allocation: field 6)


def copy_program(op, overload, params, in_shape, out_shape, reuse=False, view_after=False, busy=False,
                 clobber=False):
    """a = inp * 1, x = a * 1 (planned); [BUSY: w = inp2 * 5 planned in y's bytes, v = w * 1 - y's
    bytes in use between x's producer and the copy; CLOBBER: q = inp2 * 7 planned in a's bytes
    there too - what x's producer read is gone by the copy]; y = op(x, *params); z = inp * 3
    (REUSE: planned in x's bytes, which the plan may reuse once the copy has read x); out = y * 2
    (VIEW_AFTER: read through a static view of y's bytes, as ExecuTorch plans a view). Inputs
    (inp, inp2), outputs (out, z, v, q)."""
    p = Program()
    mul, cp = p.op("aten::mul", "out"), p.op(op, overload)
    inp, inp2 = p.tensor(F32, in_shape), p.tensor(F32, in_shape)
    one, two, three, five, seven = (p.tensor(F32, [1], const=np.float32(v).tobytes()) for v in (1, 2, 3, 5, 7))
    a, x, y = p.tensor(F32, in_shape, planned=True), p.tensor(F32, in_shape, planned=True), \
        p.tensor(F32, out_shape, planned=True)
    p.call(mul, [inp, one, a, a])
    p.call(mul, [a, one, x, x])
    w, v, q = (p.tensor(F32, in_shape, planned=True) for _ in range(3))
    p.call(mul, [inp2, five, w, w])
    p.call(mul, [w, one, v, v])
    p.call(mul, [inp2, seven, q, q])
    if busy:
        alloc(p, w)[6] = alloc(p, y)[6]
    if clobber:
        alloc(p, q)[6] = alloc(p, a)[6]
    p.call(cp, [x] + [f(p) for f in params] + [y, y])
    z = p.tensor(F32, in_shape, planned=True)
    p.call(mul, [inp, three, z, z])
    src = y
    if view_after:
        src = p.tensor(F32, [int(np.prod(out_shape))], planned=True)
        alloc(p, src)[6] = alloc(p, y)[6]
    out = p.tensor(F32, list(p.values[src].fields[1].fields[2][2]), planned=True)
    p.call(mul, [src, two, out, out])
    if reuse:
        alloc(p, z)[6] = alloc(p, x)[6]
    p.inputs, p.outputs = [inp, inp2], [out, z, v, q]
    return p.to_bytes()


CASES = {
    "clone": ("aten::clone", "out", [lambda p: p.none()], [2, 3, 4], [2, 3, 4]),
    "unsqueeze": ("aten::unsqueeze_copy", "out", [lambda p: p.int(1)], [2, 3, 4], [2, 1, 3, 4]),
    "squeeze": ("aten::squeeze_copy", "dims_out", [lambda p: p.int_list([1])], [2, 1, 4], [2, 4]),
    "view": ("aten::view_copy", "out", [lambda p: p.int_list([6, -1])], [2, 3, 4], [6, 4]),
    "expand_same": ("aten::expand_copy", "out", [lambda p: p.int_list([2, -1, 4]), lambda p: p.bool(False)],
                    [2, 3, 4], [2, 3, 4]),
    "permute_ones": ("aten::permute_copy", "out", [lambda p: p.int_list([1, 0, 2])], [1, 3, 4], [3, 1, 4]),
}


# (expand and permute decline where the call's shapes move elements: only the result views)
ALWAYS = {"clone", "unsqueeze", "squeeze", "view"}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("plan", ["", "reuse", "view_after", "reuse+busy", "reuse+busy+clobber"])
def test_a_copy_becomes_a_view_where_the_plan_allows(case, plan):
    """The result views the input's bytes where they stay until its last read; else (a copy that
    relabels whatever the shapes) x's producer writes x straight where the result is planned
    where nothing else is there meanwhile; else that producer runs at the copy, where what it
    reads is still there; else the copy runs."""
    op, overload, params, in_shape, out_shape = CASES[case]
    data = copy_program(op, overload, params, in_shape, out_shape, reuse="reuse" in plan,
                        view_after=plan == "view_after", busy="busy" in plan, clobber="clobber" in plan)
    rng = np.random.default_rng(1)
    x, x2 = rng.standard_normal(in_shape, dtype=np.float32), rng.standard_normal(in_shape, dtype=np.float32)
    want = (x * 2).reshape(-1 if plan == "view_after" else out_shape)
    for elide in (True, False):
        m = load(data, elide)
        for _ in range(2):  # (a second call: the result's bytes given back and taken again)
            out, z, v, q = m([x, x2])
            assert np.array_equal(np.asarray(out), want), (case, plan, elide)
            assert np.array_equal(np.asarray(z), x * 3), (case, plan, elide)
            assert np.array_equal(np.asarray(v), x2 * 5) and np.array_equal(np.asarray(q), x2 * 7), (case, plan)
        expect = {"": 1, "view_after": 1, "reuse": int(case in ALWAYS), "reuse+busy": int(case in ALWAYS),
                  "reuse+busy+clobber": 0}[plan]
        assert elided(m, [x, x2]) == (expect if elide else 0), (case, plan, elide)
        # the input's kernel ran at the copy where the result's bytes were busy: it says so
        names = [e.name for e in m.profile([x, x2]).events if e.depth == 0]
        if elide and plan == "reuse+busy" and case in ALWAYS:
            at = names.index("etnp::elided_copy")
            assert names[at - 1] == "aten::mul.out" and names[at - 2] == "aten::mul.out", names


def test_a_copy_that_moves_elements_runs():
    """permute_copy of dims of size > 1 and an expand that broadcasts: their kernels decline the
    view and the copy runs."""
    for op, overload, params, shape_in, shape_out, f in [
        ("aten::permute_copy", "out", [lambda p: p.int_list([1, 0, 2])], [2, 3, 4], [3, 2, 4],
         lambda x: x.transpose(1, 0, 2)),
        ("aten::expand_copy", "out", [lambda p: p.int_list([2, 3, 4]), lambda p: p.bool(False)], [2, 1, 4],
         [2, 3, 4], lambda x: np.broadcast_to(x, (2, 3, 4)))]:
        m = load(copy_program(op, overload, params, shape_in, shape_out))
        x = np.random.default_rng(2).standard_normal(shape_in, dtype=np.float32)
        out = m([x, x])[0]
        assert np.array_equal(np.asarray(out), f(x) * 2), op
        assert elided(m, [x, x]) == 0, op


def test_chained_copies_view_the_first_input():
    """x -> clone -> unsqueeze -> squeeze -> out = . * 2: each copy a view of x's bytes."""
    p = Program()
    mul = p.op("aten::mul", "out")
    clone, unsq = p.op("aten::clone", "out"), p.op("aten::unsqueeze_copy", "out")
    sq = p.op("aten::squeeze_copy", "dims_out")
    inp = p.tensor(F32, [3, 4])
    one, two = (p.tensor(F32, [1], const=np.float32(v).tobytes()) for v in (1, 2))
    x, a, b, c, out = (p.tensor(F32, s, planned=True) for s in ([3, 4], [3, 4], [3, 1, 4], [3, 4], [3, 4]))
    p.call(mul, [inp, one, x, x])
    p.call(clone, [x, p.none(), a, a])
    p.call(unsq, [a, p.int(1), b, b])
    p.call(sq, [b, p.int_list([1]), c, c])
    p.call(mul, [c, two, out, out])
    p.inputs, p.outputs = [inp], [out]
    m = load(p.to_bytes())
    x = np.random.default_rng(4).standard_normal((3, 4), dtype=np.float32)
    assert np.array_equal(np.asarray(m([x])[0]), x * 2)
    assert elided(m, [x]) == 3


@pytest.mark.parametrize("name", LLMS)
def test_llm_programs_give_the_same_bits_with_copies_elided(name, monkeypatch):
    got = {}
    for mode in ("0", "1"):
        monkeypatch.setenv("ETNP_ELIDE_COPIES", mode)
        _, got[mode] = decode(name, 1)
    for i, (a, b) in enumerate(zip(got["0"], got["1"])):
        assert np.array_equal(a, b), (name, i)


def test_a_copy_views_or_runs_call_by_call():
    """A permute_copy of dynamic shapes: a relabelling where the moved dim has size 1 (viewed),
    a real transpose otherwise (its kernel runs, into the result's own planned bytes, given
    back to it) - alternating calls give each call's own answer."""
    p = Program()
    mul, perm = p.op("aten::mul", "out"), p.op("aten::permute_copy", "out")
    bound = lambda t: p.values[t].fields[1].fields.__setitem__(8, ("i8", 1)) or t  # DYNAMIC_BOUND
    inp = bound(p.tensor(F32, [2, 3, 4]))
    one, two = (p.tensor(F32, [1], const=np.float32(v).tobytes()) for v in (1, 2))
    x, y, out = (bound(p.tensor(F32, s, planned=True)) for s in ([2, 3, 4], [3, 2, 4], [3, 2, 4]))
    p.call(mul, [inp, one, x, x])
    p.call(perm, [x, p.int_list([1, 0, 2]), y, y])
    p.call(mul, [y, two, out, out])
    p.inputs, p.outputs = [inp], [out]
    m = load(p.to_bytes())
    rng = np.random.default_rng(6)
    for n, viewed in [(1, 1), (2, 0), (1, 1), (2, 0)]:
        x = rng.standard_normal((n, 3, 4), dtype=np.float32)
        assert np.array_equal(np.asarray(m([x])[0]), x.transpose(1, 0, 2) * 2), n
        assert elided(m, [x]) == viewed, n


@pytest.mark.parametrize("shape,perm", [((3, 17, 9), (0, 2, 1)), ((1, 9, 512, 64), (0, 1, 3, 2)),
                                        ((2, 5, 3, 7), (1, 0, 3, 2)), ((4, 6, 10), (2, 0, 1)),
                                        ((2, 3, 13, 11), (3, 0, 1, 2)), ((8, 33), (1, 0))])
def test_permutes_that_transpose_the_last_two_dims(shape, perm):
    """permute_copy where the output's last dim is strided in the input (blocked 2-D transposes
    where the input's next-to-last output dim is its contiguous one): numpy's answer, float32 and
    int32."""
    for dtype, code in ((np.float32, F32), (np.int32, I32)):
        p = Program()
        op = p.op("aten::permute_copy", "out")
        x = p.tensor(code, list(shape))
        out = p.tensor(code, [shape[d] for d in perm], planned=True)
        p.call(op, [x, p.int_list(list(perm)), out, out])
        p.inputs, p.outputs = [x], [out]
        m = load(p.to_bytes(), elide=False)
        a = (np.random.default_rng(8).standard_normal(shape) * 100).astype(dtype)
        assert np.array_equal(np.asarray(m([a])[0]), a.transpose(perm)), (shape, perm, dtype)


def test_a_copy_with_a_malformed_parameter_raises_as_the_op_does():
    """unsqueeze_copy whose dim is a double: the view declines, the op's kernel refuses it - the
    same error with elision as without."""
    p = Program()
    mul, unsq = p.op("aten::mul", "out"), p.op("aten::unsqueeze_copy", "out")
    inp = p.tensor(F32, [2, 3])
    one, two = (p.tensor(F32, [1], const=np.float32(v).tobytes()) for v in (1, 2))
    x, y, out = (p.tensor(F32, s, planned=True) for s in ([2, 3], [2, 1, 3], [2, 1, 3]))
    p.call(mul, [inp, one, x, x])
    p.call(unsq, [x, p.double(1.0), y, y])
    p.call(mul, [y, two, out, out])
    p.inputs, p.outputs = [inp], [out]
    errors = []
    for elide in (False, True):
        m = load(p.to_bytes(), elide)
        with pytest.raises(en.ExecutionError) as e:
            m([np.ones((2, 3), np.float32)])
        errors.append(str(e.value))
    assert errors[0] == errors[1], errors
