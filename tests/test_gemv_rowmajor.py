"""Single-row float matmuls (aten::bmm / mm / addmm with M = 1) take the unpacked-B path
(native/src/kernels/compute/gemv_f32.cpp, AVX-512) where the CPU has it: checked against numpy in
float64 and, bit for bit, against the same rows computed by the packed GEMM (M = 2), across column
counts on and off the 16-lane and 128-column groups, long and short K, biases and every CPU path."""
import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import run_with_cpu
from pte_build import F32, Program


def bmm_method(B, M, K, N, threads=1):
    p = Program()
    a, b = p.tensor(F32, [B, M, K], planned=True), p.tensor(F32, [B, K, N], planned=True)
    o = p.tensor(F32, [B, M, N], planned=True)
    p.call(p.op("aten::bmm", "out"), [a, b, o, o])
    p.inputs, p.outputs = [a, b], [o]
    return en.Runtime(num_threads=threads).load_program(p.to_bytes()).load_method("forward")


def addmm_method(M, K, N):
    p = Program()
    bias, a, b = p.tensor(F32, [N], planned=True), p.tensor(F32, [M, K], planned=True), p.tensor(F32, [K, N], planned=True)
    o = p.tensor(F32, [M, N], planned=True)
    p.call(p.op("aten::addmm", "out"), [bias, a, b, p.double(1.0), p.double(1.0), o, o])
    p.inputs, p.outputs = [bias, a, b], [o]
    return en.Runtime.get().load_program(p.to_bytes()).load_method("forward")


SHAPES = [(9, 64, 2048), (9, 2048, 64), (2, 5, 1), (3, 300, 129), (1, 17, 250), (4, 0, 40)]


@pytest.mark.parametrize("B,K,N", SHAPES)
def test_one_row_bmm_matches_numpy_and_the_packed_gemm(B, K, N):
    rng = np.random.default_rng(K + N)
    a = rng.standard_normal((B, 2, K)).astype(np.float32)
    b = rng.standard_normal((B, K, N)).astype(np.float32)
    one = bmm_method(B, 1, K, N)([a[:, :1].copy(), b])[0]
    np.testing.assert_allclose(one, a[:, :1].astype(np.float64) @ b.astype(np.float64), atol=1e-4, rtol=1e-4)
    a[:, 1] = a[:, 0]  # two equal rows: the packed GEMM's row 0 is the same FMA sequence
    two = bmm_method(B, 2, K, N)([a, b])[0]
    np.testing.assert_array_equal(one[:, 0], two[:, 0])
    np.testing.assert_array_equal(bmm_method(B, 1, K, N, threads=2)([a[:, :1].copy(), b])[0], one)


def test_one_row_addmm_bias():
    rng = np.random.default_rng(3)
    K, N = 70, 200
    bias = rng.standard_normal(N).astype(np.float32)
    a = rng.standard_normal((2, K)).astype(np.float32)
    a[1] = a[0]
    b = rng.standard_normal((K, N)).astype(np.float32)
    one = addmm_method(1, K, N)([bias, a[:1].copy(), b])[0]
    np.testing.assert_allclose(one, bias + a[:1].astype(np.float64) @ b, atol=1e-4, rtol=1e-4)
    np.testing.assert_array_equal(one[0], addmm_method(2, K, N)([bias, a, b])[0][0])


def test_one_row_bmm_nan_and_inf():
    a = np.ones((1, 1, 3), np.float32)
    b = np.ones((1, 3, 20), np.float32)
    b[0, 1, 4] = np.nan
    b[0, 2, 7] = np.inf
    out = bmm_method(1, 1, 3, 20)([a, b])[0]
    assert np.isnan(out[0, 0, 4]) and out[0, 0, 7] == np.inf and out[0, 0, 0] == 3


PATH_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_gemv_rowmajor import SHAPES, bmm_method
for B, K, N in SHAPES:
    rng = np.random.default_rng(K + N)
    a = rng.standard_normal((B, 1, K)).astype(np.float32)
    b = rng.standard_normal((B, K, N)).astype(np.float32)
    out = bmm_method(B, 1, K, N, threads=2)([a, b])[0]
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64), atol=1e-4, rtol=1e-4)
print("ok")
"""


@pytest.mark.parametrize("cpu", ["generic", "avx2"])
def test_one_row_bmm_every_cpu_path(cpu):
    r = run_with_cpu(cpu, PATH_SCRIPT)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
