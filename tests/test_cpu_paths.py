"""Every run-time-selected kernel path gives the reference answers: the fixture tests use the
best path this CPU has; here the others are forced with ETNP_CPU (read once per process)."""

import pytest

from conftest import MODELS, run_with_cpu

SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import executorch_numpy_runtime as en
from conftest import assert_matches, method_inputs, method_outputs, model_path, reference
from test_fixtures import TOLERANCES
for name in sys.argv[2:]:
    ref = reference(name)
    m = en.Runtime(num_threads=2).load_program(model_path(name)).load_method("forward")
    atol, rtol = TOLERANCES[name]
    assert_matches(m(method_inputs(ref, "forward")), method_outputs(ref, "forward"), atol, rtol, name)
print("cpu=" + en.runtime_info()["cpu_features"])
print("ok")
"""

MODELS_TO_CHECK = ["mobilenet_v2_xnn", "conv_inputs_xnn", "conv_regimes_xnn", "half_xnn", "small_cnn_xnn", "act_cnn_xnn", "encoder_xnn", "mlp", "small_cnn", "ops_conv3d",
                   "qlinear_dyn_xnn", "qmlp_dyn_xnn", "custom_lstm", "qconv_chain_static_xnn", "qdw_block_static_xnn",
                   "qfire_static_xnn", "qregnet_block_static_xnn", "q8da4w_xnn"]


@pytest.mark.parametrize("cpu", ["generic", "avx2"])
def test_forced_kernel_paths_match_torch(cpu):
    r = run_with_cpu(cpu, SCRIPT, *MODELS_TO_CHECK)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
    import executorch_numpy_runtime as en
    native = en.runtime_info()["cpu_features"]
    if cpu == "generic" or native == "generic":
        want = "generic"
    else:  # ETNP_CPU=avx2 caps x86 at AVX2; it leaves aarch64's NEON on
        want = "neon" if native == "neon" else "avx2,fma"
    assert f"cpu={want}" in r.stdout


def test_cpu_features_reported():
    import executorch_numpy_runtime as en
    assert en.runtime_info()["cpu_features"] in ("generic", "avx2,fma", "avx512f,avx2,fma", "neon")
