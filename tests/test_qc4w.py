"""Per-channel 4-bit weights (XNNPACK qcint4, PT2E weight_qmin -8 / weight_qmax 7) x dynamic int8
activations run on the 4-bit GEMM with the filter kept 4-bit (issue #29 "qb4w and qc4w", issue #32).

qmlp_qc4w_xnn: four linears (input channels 64, 96, 40 and 37 - a multiple of 8, not one, odd: the
program's rows of nibbles padded to whole bytes; with and without bias) exported by
tools/export_fixtures.py; its npz holds the converted model's eager outputs (forward:out:0) and
the reference runtime's (forward:runtime_out:0: upstream ExecuTorch 1.3.1 + XNNPACK).
"""
import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import method_inputs, model_path, reference, run_with_cpu

NAME = "qmlp_qc4w_xnn"
# the filters' weights (4 bits each) and their column scales and biases (float32)
FILTERS = [(64, 96, True), (96, 40, False), (40, 37, True), (37, 9, True)]
NIBBLE_BYTES = sum(ic * oc // 2 for ic, oc, _ in FILTERS)
FLOAT_BYTES = sum(ic * oc * 4 for ic, oc, _ in FILTERS)
# outputs up to ~0.21; seen: 1.5e-8 off the reference runtime (whose epilogue orders the float steps
# differently), 7.4e-4 off eager (which quantizes each activation tensor with one scale, XNNPACK
# each row with its own) - as the reference runtime itself. One int8 code of an activation flipped
# between layers would move an output by ~1e-3.
RUNTIME_ATOL, EAGER_ATOL = 1e-5, 2e-3

SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import executorch_numpy_runtime as en
from conftest import method_inputs, model_path, reference
ref = reference("qmlp_qc4w_xnn")
for t in (1, 2):
    out = en.Runtime(num_threads=t).load_program(model_path("qmlp_qc4w_xnn")).load_method("forward")(
        method_inputs(ref, "forward"))[0]
    np.save(sys.argv[2] + "_%d.npy" % t, out)
"""


def _run(threads=1, **kw):
    ref = reference(NAME)
    m = en.Runtime(num_threads=threads).load_program(model_path(NAME), **kw).load_method("forward")
    return m, m(method_inputs(ref, "forward"))[0]


def test_matches_reference_runtime_and_eager():
    ref = reference(NAME)
    want_rt, want_eager = ref["forward:runtime_out:0"], ref["forward:out:0"]
    for threads in (1, 2):
        _, out = _run(threads)
        assert out.shape == want_rt.shape and out.dtype == want_rt.dtype
        np.testing.assert_allclose(out, want_rt, atol=RUNTIME_ATOL, rtol=0, err_msg=f"{threads} thread(s)")
        np.testing.assert_allclose(out, want_eager, atol=EAGER_ATOL, rtol=0, err_msg=f"{threads} thread(s)")


def test_filters_stay_four_bit():
    m, _ = _run()
    s = m.memory_stats()
    # the nibbles as packed (16-column panels, the scales, the zero point's column constants): about
    # half a byte a weight - never a float32 (or int8) copy of the matrices
    assert NIBBLE_BYTES <= s["packed_weights"] < NIBBLE_BYTES + 12 * 1024, s
    assert s["packed_weights"] < FLOAT_BYTES // 4, s
    assert s["constants"] < FLOAT_BYTES // 8, s  # the filters are not decoded or kept


@pytest.mark.parametrize("cpu", ["generic", "avx2"])
def test_cpu_paths_give_the_same_bits(cpu, tmp_path):
    """The 4-bit GEMM's paths (AMX, AVX-512 VNNI, AVX2, portable) make the same float steps."""
    r = run_with_cpu(cpu, SCRIPT, str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr[-3000:]
    _, here = _run(1)
    for t in (1, 2):
        np.testing.assert_array_equal(np.load(str(tmp_path / f"out_{t}.npy")), here, err_msg=f"ETNP_CPU={cpu}, {t} thr")


def test_weight_cache_hit_gives_the_same_bits(tmp_path):
    cache = str(tmp_path / "w.etnpwc")
    plain, want = _run()
    first, got1 = _run(weight_cache=cache)  # a miss: packs, writes the file
    hit, got2 = _run(weight_cache=cache)  # a hit: the packed nibbles mapped from the file
    s1, s2 = first.memory_stats(), hit.memory_stats()
    assert s1["mapped_weights"] == 0
    assert s2["mapped_weights"] >= NIBBLE_BYTES and s2["packed_weights"] < s1["packed_weights"] // 4 + 4096, s2
    np.testing.assert_array_equal(got1, want)
    np.testing.assert_array_equal(got2, want)


STATIC = "qmlp_qc4w_static_xnn"  # the same four linears x static int8 activations (qs8 x qcint4)


@pytest.mark.parametrize("cpu", ["native", "avx2", "generic"])
def test_static_activations_give_the_converted_models_values(cpu, tmp_path):
    """qs8 x qc4w runs the static int8 GEMM (the nibbles widened to int8 values at load): every
    output is a point of the output's int8 grid, the same point the converted model computes in
    eager mode, on every CPU path and thread count. (The reference runtime's outputs in the npz,
    forward:runtime_out:0, differ from the converted model's on 78 of the 90 values - upstream's
    qs8 x qc4w on these shapes (input channels 64, 96, 40, 37); on the atlas's 768x768 it agrees.)"""
    script = SCRIPT.replace(NAME, STATIC)
    r = run_with_cpu(cpu, script, str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr[-3000:]
    want = reference(STATIC)["forward:out:0"]
    for t in (1, 2):
        got = np.load(str(tmp_path / f"out_{t}.npy"))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=0, err_msg=f"ETNP_CPU={cpu}, {t} thread(s)")


def test_static_filters_are_int8_not_float():
    m = en.Runtime(num_threads=1).load_program(model_path(STATIC)).load_method("forward")
    s = m.memory_stats()
    # int8 values (one byte a weight) in the static GEMM's panels, not the float packing (four)
    assert s["packed_weights"] < FLOAT_BYTES // 2, s
