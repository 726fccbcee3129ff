"""Dynamic int8 (qd8 x qc8w) programs give the published ExecuTorch runtime's bits.

qbert_dyn_xnn: three BERT-like blocks (dynamic int8 linears; attention by batch matmuls and
softmax; residual adds; GELU) whose npz holds the reference runtime's outputs (forward:runtime_out:0,
recorded by tools/export_fixtures.py with upstream ExecuTorch 1.3.1 + XNNPACK on an AVX-512
machine). Every dynamic quantization reads the bits of the float operations before it, so one ulp
of difference can flip an int8 code and a flip grows with depth: on the AVX-512 path (the kernels
the reference ran) ours must be bit-identical. Elsewhere XNNPACK itself sums the softmax in another
order (its AVX2 / scalar kernels), so there only a few ulps are allowed - far below the output's
quantization step (~1.5e-2).
"""

import numpy as np
import pytest

from conftest import model_path, reference, run_with_cpu

NAME = "qbert_dyn_xnn"
SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import executorch_numpy_runtime as en
from conftest import model_path, reference
ref = reference("qbert_dyn_xnn")
out = en.Runtime(num_threads=2).load_program(model_path("qbert_dyn_xnn")).load_method("forward")([ref["forward:in:0"]])[0]
print("maxdiff=%r" % float(np.abs(out.astype(np.float64) - ref["forward:runtime_out:0"]).max()))
"""


def test_qbert_dyn_gives_reference_runtime_bits(rt):
    import executorch_numpy_runtime as en
    ref = reference(NAME)
    want = ref["forward:runtime_out:0"]
    for threads in (1, 2):
        out = en.Runtime(num_threads=threads).load_program(model_path(NAME)).load_method("forward")([ref["forward:in:0"]])[0]
        assert out.shape == want.shape and out.dtype == want.dtype
        if en.runtime_info()["cpu_features"].startswith("avx512f"):
            np.testing.assert_array_equal(out, want, err_msg=f"{threads} thread(s)")
        else:
            np.testing.assert_allclose(out, want, atol=1e-6, rtol=0, err_msg=f"{threads} thread(s)")


@pytest.mark.parametrize("cpu", ["generic", "avx2"])
def test_qbert_dyn_forced_paths_within_ulps(cpu):
    r = run_with_cpu(cpu, SCRIPT)
    assert r.returncode == 0, r.stderr[-3000:]
    diff = float(r.stdout.strip().split("maxdiff=")[1])
    assert diff <= 1e-6, f"ETNP_CPU={cpu}: max |ours - reference runtime| = {diff}"
