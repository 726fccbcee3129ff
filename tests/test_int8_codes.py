"""Static-int8 values that only int8 nodes write and read (GEMMs, depthwise convolutions, adds,
concatenations, max pooling, transposes, reshapes, Converts from / to float32, global average
pooling) are kept as int8 codes between them (Value::as_codes); the results
must be exactly those of the same program keeping float32 grid points (ETNP_XNN_CODES=off), with
every kernel path (ETNP_CPU). Both variables are read once per process: each run is a subprocess."""
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import executorch_numpy_runtime as en
from conftest import method_inputs, model_path, reference
out = {}
for name in sys.argv[3:]:
    m = en.Runtime(num_threads=2).load_program(model_path(name)).load_method("forward")
    for i, y in enumerate(m(method_inputs(reference(name), "forward"))):
        out[f"{name}:{i}"] = np.asarray(y)
np.savez(sys.argv[2], **out)
"""

# qconv_chain_static_xnn: four values between convolutions kept as codes (1x1, 3x3, grouped, strided);
# qdw_block_static_xnn: depthwise convolutions reading and writing codes (3x3 and 5x5 strided), an
# add of codes and float32 grid points; qfire_static_xnn: max pooling and concatenation of codes;
# qshuffle_static_xnn: NCHW <-> NHWC transposes, reshapes and Converts of codes, max pooling of 24 channels;
# qcnn_static_xnn, qregnet_block_static_xnn: global average pooling of codes (integer sums, as of
# grid points with ETNP_XNN_CODES=off)
NAMES = ["qconv_chain_static_xnn", "qdw_block_static_xnn", "qfire_static_xnn", "qcnn_static_xnn",
         "qact_cnn_static_xnn", "qregnet_block_static_xnn", "qshuffle_static_xnn"]


def run(tmp_path, tag, **env_vars):
    import executorch_numpy_runtime
    env = dict(os.environ, **env_vars)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(executorch_numpy_runtime.__file__))
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    path = str(tmp_path / f"{tag}.npz")
    r = subprocess.run([sys.executable, "-c", SCRIPT, tests_dir, path] + NAMES, capture_output=True, text=True,
                       timeout=300, env=env, cwd=tests_dir)
    assert r.returncode == 0, r.stderr[-3000:]
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("cpu", ["native", "avx2", "generic"])
def test_int8_codes_equal_float_grid_points(tmp_path, cpu):
    codes = run(tmp_path, "codes", ETNP_CPU=cpu)
    grid = run(tmp_path, "grid", ETNP_CPU=cpu, ETNP_XNN_CODES="off")
    assert sorted(codes) == sorted(grid) and codes
    for k in codes:
        np.testing.assert_array_equal(codes[k], grid[k], err_msg=k)
