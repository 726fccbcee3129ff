"""Structurally invalid hand-made programs: out tensors of the wrong dtype (clean
ExecutionError before any write) and plans that would read stale memory (rejected at load)."""
import numpy as np
import pytest

import executorch_numpy_runtime as en
from pte_build import BOOL, F32, F64, I8, I64, U8, Program

N = 4096


def load(p):
    return en.Runtime.get().load_program(p.to_bytes()).load_method()


def single_op(op, overload, make_args, x_dtype=F32, x_shape=(N,), out_dtype=U8, out_shape=None):
    """forward(x) -> out = op(x, ...); the out has OUT_DTYPE (a byte-size mismatch for F32 inputs)."""
    p = Program()
    x = p.tensor(x_dtype, list(x_shape))
    o = p.tensor(out_dtype, list(out_shape or x_shape), planned=True)
    p.call(p.op(op, overload), make_args(p, x, o) + [o])
    p.inputs, p.outputs = [x], [o]
    return load(p)


CASES = {
    "view_copy": ("aten::view_copy", "out", lambda p, x, o: [x, p.int_list([N]), o], (N,), (N,)),
    "unsqueeze_copy": ("aten::unsqueeze_copy", "out", lambda p, x, o: [x, p.int(0), o], (N,), (1, N)),
    "squeeze_copy": ("aten::squeeze_copy", "dims_out", lambda p, x, o: [x, p.int_list([0]), o], (1, N), (N,)),
    "index_select": ("aten::index_select", "out",
                     lambda p, x, o: [x, p.int(0), p.tensor(I64, [N], const=np.arange(N, dtype=np.int64).tobytes()), o],
                     (N,), (N,)),
    "embedding": ("aten::embedding", "out",
                  lambda p, x, o: [x, p.tensor(I64, [4], const=np.zeros(4, np.int64).tobytes()), p.int(-1),
                                   p.bool(False), p.bool(False), o], (4, N // 4), (4, N // 4)),
    "roll": ("aten::roll", "out", lambda p, x, o: [x, p.int_list([1]), p.int_list([0]), o], (N,), (N,)),
    "clone": ("aten::clone", "out", lambda p, x, o: [x, p.none(), o], (N,), (N,)),
    "permute_copy": ("aten::permute_copy", "out", lambda p, x, o: [x, p.int_list([0]), o], (N,), (N,)),
    "slice_copy": ("aten::slice_copy", "Tensor_out",
                   lambda p, x, o: [x, p.int(0), p.int(0), p.int(N), p.int(1), o], (N,), (N,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_of_another_dtype_is_refused_before_any_write(name):
    op, overload, args, xs, os_ = CASES[name]
    m = single_op(op, overload, lambda p, x, o: args(p, x, o)[:-1], x_shape=xs, out_shape=os_)
    x = np.ones(xs, np.float32)
    with pytest.raises(en.ExecutionError, match="out tensor has dtype uint8, the op produces float32"):
        m([x])


def test_out_of_the_right_dtype_still_runs():
    m = single_op("aten::unsqueeze_copy", "out", lambda p, x, o: [x, p.int(0)], out_dtype=F32, out_shape=(1, N))
    x = np.arange(N, dtype=np.float32)
    np.testing.assert_array_equal(m([x])[0], x[None])


def add_program(**tensor_kw):
    """forward(x) = x + c, where c is made with TENSOR_KW."""
    p = Program()
    x = p.tensor(F32, [4])
    c = p.tensor(F32, [4], **tensor_kw)
    o = p.tensor(F32, [4], planned=True)
    p.call(p.op("aten::add", "out"), [x, c, p.int(1), o, o])
    p.inputs, p.outputs = [x], [o]
    return p, c


def test_constant_with_a_planned_allocation_is_rejected():
    p, c = add_program(planned=True, buffer_idx=1)  # constant index 1 AND a planned allocation
    p.constants.append(np.ones(4, np.float32).tobytes())
    with pytest.raises(en.ProgramLoadError, match=f"value {c}: .*constant data index 1 and a planned allocation"):
        load(p)


def test_mutable_buffer_with_initial_data_still_works():
    p, _ = add_program(mutable=np.arange(4, dtype=np.float32).tobytes())
    out = load(p)([np.ones(4, np.float32)])[0]
    np.testing.assert_array_equal(out, np.arange(4) + 1.0)


def test_storage_offset_is_rejected():
    p, c = add_program(const=np.ones(8, np.float32).tobytes(), storage_offset=2)
    with pytest.raises(en.ProgramLoadError, match=f"value {c}: tensor has storage_offset 2"):
        load(p)


def test_return_value_redeclared_with_another_dtype_is_rejected():
    p = Program()
    x = p.tensor(F32, [4])
    o = p.tensor(F32, [4], planned=True)
    ret = p.tensor(F64, [4], planned=True)  # the call's return, read by the next op, never written
    o2 = p.tensor(F64, [4], planned=True)
    add = p.op("aten::add", "out")
    p.call(add, [x, x, p.int(1), o, ret])
    p.call(add, [ret, ret, p.int(1), o2, o2])
    p.inputs, p.outputs = [x], [o2]
    with pytest.raises(en.ProgramLoadError, match=f"return value {ret} \\(float64 .*not the out value {o}"):
        load(p)


def test_move_into_a_value_of_another_dtype_is_rejected():
    p = Program()
    x = p.tensor(F32, [4])
    o = p.tensor(F32, [4], planned=True)
    b = p.tensor(BOOL, [4], planned=True)
    p.call(p.op("aten::add", "out"), [x, x, p.int(1), o, o])
    p.move(o, b)
    p.inputs, p.outputs = [x], [b]
    with pytest.raises(en.ProgramLoadError, match=f"MoveCall moves value {o} \\(float32 .*value {b} declared as bool"):
        load(p)


@pytest.mark.parametrize("kind", ["convolution", "avg_pool2d", "max_pool2d"])
def test_window_larger_than_the_padded_input(kind):
    """A 3x3 window, stride 3, over a 1x1 input: no output position (PyTorch refuses it). The output
    size's division rounded the negative span up to one position, computed from outside the input."""
    p = Program()
    x = p.tensor(F32, [1, 1, 1, 1])
    o = p.tensor(F32, [1, 1, 1, 1], planned=True)
    three, zero = p.int_list([3, 3]), p.int_list([0, 0])
    if kind == "convolution":
        w = p.tensor(F32, [1, 1, 3, 3], const=np.ones(9, np.float32).tobytes())
        args = [x, w, p.none(), three, zero, p.int_list([1, 1]), p.bool(False), zero, p.int(1), o]
        p.call(p.op("aten::convolution", "out"), args)
    elif kind == "avg_pool2d":
        p.call(p.op("aten::avg_pool2d", "out"), [x, three, three, zero, p.bool(False), p.bool(True), p.none(), o])
    else:
        idx = p.tensor(I64, [1, 1, 1, 1], planned=True)
        p.call(p.op("aten::max_pool2d_with_indices", "out"),
               [x, three, three, zero, p.int_list([1, 1]), p.bool(False), o, idx])
    p.inputs, p.outputs = [x], [o]
    with pytest.raises(en.ExecutionError, match="empty"):
        load(p)([np.ones((1, 1, 1, 1), np.float32)])


@pytest.mark.parametrize("kind", ["layer_norm", "group_norm", "batch_norm"])
def test_norm_weight_of_the_wrong_size(kind):
    """A normalisation's weight with fewer elements than it scales (fuzz_loader --sweep: layer_norm read
    past its weight) is an ExecutionError, as in PyTorch, not a read past the tensor."""
    p = Program()
    x = p.tensor(F32, [2, 8, 1])
    w = p.tensor(F32, [4], const=np.ones(4, np.float32).tobytes())
    o = p.tensor(F32, [2, 8, 1], planned=True)
    if kind == "layer_norm":
        mean, rstd = p.tensor(F32, [2, 1, 1], planned=True), p.tensor(F32, [2, 1, 1], planned=True)
        p.call(p.op("aten::native_layer_norm", "out"), [x, p.int_list([8, 1]), w, p.none(), p.double(1e-5), o, mean, rstd])
    elif kind == "group_norm":
        mean, rstd = p.tensor(F32, [2, 2], planned=True), p.tensor(F32, [2, 2], planned=True)
        p.call(p.op("aten::native_group_norm", "out"),
               [x, w, p.none(), p.int(2), p.int(8), p.int(1), p.int(2), p.double(1e-5), o, mean, rstd])
    else:
        stats = p.tensor(F32, [8], const=np.ones(8, np.float32).tobytes())
        p.call(p.op("aten::_native_batch_norm_legit_no_training", "out"),
               [x, w, p.none(), stats, stats, p.double(0.1), p.double(1e-5), o])
    p.inputs, p.outputs = [x], [o]
    with pytest.raises(en.ExecutionError, match="weight of shape"):
        load(p)([np.ones((2, 8, 1), np.float32)])


@pytest.mark.parametrize("zero_point", [0, -(2 ** 63)])
def test_dequantize_per_token_parameters(zero_point):
    """dequantize_per_token with 2 scales for 4 tokens read past the scales; a zero point of -2**63
    overflowed code - zero_point (fuzz_loader --sweep, UBSan). The first is an ExecutionError, the
    second a finite-or-not float like any other far-out zero point."""
    p = Program()
    x = p.tensor(I8, [4, 8])
    n = 2 if zero_point == 0 else 4
    scales = p.tensor(F32, [n, 1], const=np.ones(n, np.float32).tobytes())
    zps = p.tensor(I64, [n, 1], const=np.full(n, zero_point, np.int64).tobytes())
    o = p.tensor(F32, [4, 8], planned=True)
    p.call(p.op("quantized_decomposed::dequantize_per_token", "out"),
           [x, scales, zps, p.int(-128), p.int(127), p.int(1), p.int(6), o])
    p.inputs, p.outputs = [x], [o]
    m = load(p)
    codes = np.arange(32, dtype=np.int8).reshape(4, 8)
    if zero_point == 0:
        with pytest.raises(en.ExecutionError, match="2 quantization parameters for 4 groups"):
            m([codes])
    else:
        (y,) = m([codes])
        assert np.all(y == np.float32(codes.astype(np.float64) + 2.0 ** 63))
