"""float32 layer norm gives the published ExecuTorch runtime's bits, on every CPU path.

The reference runtime (upstream ExecuTorch 1.3.1) runs native_layer_norm.out as its optimized
kernel, in float32: rows of N >= 256 by a cascaded 8-lane Welford (RowwiseMoments) and
y = (x * rstd + (-rstd * mean)) * w + b, rows of N < 256 by sequential float sums and
y = (x - mean) / std * w + b (kernels/layer_norm_f32.cpp spells it out). Dynamic int8 programs
(BERT) quantize the layer norms' outputs, so every ulp there can flip an int8 code downstream.

layer_norm_ref: layer norms of widths 768, 300 (a tail of 4), 100 (the scalar path) and 260
without weight and bias; qbert_ln_dyn_xnn: two post-LN BERT blocks (dynamic int8 linears, hidden
64). Both npz files hold the reference runtime's outputs (forward:runtime_out:i, recorded by
tools/export_fixtures.py on an AVX-512 machine).
"""

import numpy as np
import pytest

from conftest import model_path, reference, run_with_cpu

SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import executorch_numpy_runtime as en
from conftest import model_path, reference
ref = reference("layer_norm_ref")
outs = en.Runtime(num_threads=2).load_program(model_path("layer_norm_ref")).load_method("forward")(
    [ref["forward:in:%d" % i] for i in range(4)])
bad = sum(int((np.asarray(o).view(np.int32) != ref["forward:runtime_out:%d" % i].view(np.int32)).sum())
          for i, o in enumerate(outs))
print("mismatches=%d" % bad)
"""


def run(name, threads):
    import executorch_numpy_runtime as en
    ref = reference(name)
    n = sum(1 for k in ref if k.startswith("forward:in:"))
    outs = en.Runtime(num_threads=threads).load_program(model_path(name)).load_method("forward")(
        [ref[f"forward:in:{i}"] for i in range(n)])
    return ref, outs


@pytest.mark.parametrize("threads", [1, 2])
def test_layer_norm_gives_reference_runtime_bits(rt, threads):
    ref, outs = run("layer_norm_ref", threads)
    assert len(outs) == 4
    for i, o in enumerate(outs):
        want = ref[f"forward:runtime_out:{i}"]
        assert o.shape == want.shape and o.dtype == want.dtype
        np.testing.assert_array_equal(o.view(np.int32), want.view(np.int32), err_msg=f"output {i}")


@pytest.mark.parametrize("cpu", ["generic", "avx2"])
def test_layer_norm_forced_paths_give_reference_bits(cpu):
    r = run_with_cpu(cpu, SCRIPT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().endswith("mismatches=0"), f"ETNP_CPU={cpu}: {r.stdout.strip()}"


@pytest.mark.parametrize("threads", [1, 2])
def test_qbert_ln_dyn_gives_reference_runtime_bits(rt, threads):
    import executorch_numpy_runtime as en
    ref, (out,) = run("qbert_ln_dyn_xnn", threads)
    want = ref["forward:runtime_out:0"]
    assert out.shape == want.shape and out.dtype == want.dtype
    if en.runtime_info()["cpu_features"].startswith("avx512f"):
        np.testing.assert_array_equal(out, want)
    else:  # XNNPACK's own AVX2 / scalar softmax sums in another order (see test_q8d_fidelity.py)
        np.testing.assert_allclose(out, want, atol=1e-5, rtol=0)
