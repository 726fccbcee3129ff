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

MODELS_TO_CHECK = ["mobilenet_v2_xnn", "conv_inputs_xnn", "conv_regimes_xnn", "resblock1d_xnn", "half_xnn", "small_cnn_xnn", "act_cnn_xnn", "encoder_xnn", "mlp", "small_cnn", "ops_conv3d",
                   "qlinear_dyn_xnn", "qmlp_dyn_xnn", "custom_lstm", "qconv_chain_static_xnn", "qdw_block_static_xnn",
                   "qfire_static_xnn", "qregnet_block_static_xnn", "q8da4w_xnn", "winograd_xnn", "winograd1d_xnn",
                   "dead_taps_xnn", "qsilu_dw_static_xnn"]


@pytest.mark.parametrize("cpu", ["generic", "avx2", "avx512"])
def test_forced_kernel_paths_match_torch(cpu):
    r = run_with_cpu(cpu, SCRIPT, *MODELS_TO_CHECK)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
    import executorch_numpy_runtime as en
    native = en.runtime_info()["cpu_features"]
    if cpu == "generic" or native == "generic":
        want = "generic"
    elif cpu == "avx512":  # everything but the AMX tiles
        want = native.replace(",amx-int8", "")
    else:  # ETNP_CPU=avx2 caps x86 at AVX2; on aarch64 it keeps NEON without the dot product
        want = "neon" if native.startswith("neon") else "avx2,fma"
    assert f"cpu={want}\n" in r.stdout


def test_cpu_features_reported():
    import executorch_numpy_runtime as en
    assert en.runtime_info()["cpu_features"] in ("generic", "avx2,fma", "avx512f,avx2,fma", "avx512f,avx2,fma,amx-int8",
                                                 "neon", "neon,dotprod")


def _cpu_has_avx2_fma():
    """Whether this x86-64 CPU (and OS) runs AVX2 + FMA, asked of the OS rather than of the runtime;
    None where that cannot be told (then the check below is skipped)."""
    import platform
    import subprocess
    import sys
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/cpuinfo") as fh:
                flags = next((line.split(":", 1)[1].split() for line in fh if line.startswith("flags")), None)
        except OSError:
            return None
        return None if flags is None else ("avx2" in flags and "fma" in flags)
    if sys.platform == "win32":  # PF_AVX2_INSTRUCTIONS_AVAILABLE (every AVX2 CPU has FMA); a
        import ctypes               # Windows older than the constant says no: only a yes counts
        return True if ctypes.windll.kernel32.IsProcessorFeaturePresent(40) else None
    if sys.platform == "darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "hw.optional.avx2_0", "hw.optional.fma"], capture_output=True,
                                 text=True, timeout=30).stdout.split()
        except (OSError, subprocess.SubprocessError):
            return None
        return out == ["1", "1"] if len(out) == 2 else None
    return None


def test_simd_kernels_compiled_where_the_cpu_has_them():
    """On an x86-64 CPU with AVX2 + FMA, this build runs the AVX2 (or AVX-512) kernels: a build that
    left them out (say, a Windows build by cl.exe instead of clang-cl: setup.py) fails here."""
    import os

    import executorch_numpy_runtime as en
    has = _cpu_has_avx2_fma()
    if has is None or os.environ.get("ETNP_CPU"):
        pytest.skip("not x86-64, CPU features unknown, or ETNP_CPU set")
    want = ("avx2,fma", "avx512f,avx2,fma", "avx512f,avx2,fma,amx-int8") if has else ("generic",)
    assert en.runtime_info()["cpu_features"] in want


BITS_SCRIPT = r"""
import hashlib
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import executorch_numpy_runtime as en
from conftest import method_inputs, model_path, reference
rt = en.Runtime(num_threads=2)
h = hashlib.sha256()
for name in ("llm_8da4w_kv", "llm_8da4w_sdpa"):  # a 20-token prefill: 20 rows, the AMX path's
    m = rt.load_program(model_path(name)).load_method("forward")
    if not m.metadata.inputs[0].dynamic:
        continue
    toks = ((np.arange(20) * 7 + 3) % 50).astype(np.int64)[None, :]
    res = m([toks]) if len(m.metadata.inputs) == 1 else m([toks, np.array([0], np.int64)])
    h.update(np.ascontiguousarray(res[0]).tobytes())
m = rt.load_program(model_path("q8da4w_xnn")).load_method("forward")
for o in m(method_inputs(reference("q8da4w_xnn"), "forward")):
    h.update(np.ascontiguousarray(o).tobytes())
print("cpu=" + en.runtime_info()["cpu_features"])
print("bits=" + h.hexdigest())
"""


def test_amx_path_gives_the_vnni_paths_bits():
    """The 4-bit GEMM's AMX tiles (16 rows and more) make the AVX-512 VNNI path's float steps:
    the same bits, whichever runs (ETNP_CPU=avx512 turns AMX off)."""
    import executorch_numpy_runtime as en
    if "amx-int8" not in en.runtime_info()["cpu_features"]:
        pytest.skip("no AMX-INT8 here (CPU, OS or permission)")
    outs = {}
    for cpu in ("native", "avx512"):
        r = run_with_cpu(cpu, BITS_SCRIPT)
        assert r.returncode == 0, r.stderr[-3000:]
        outs[cpu] = r.stdout
    assert "cpu=avx512f,avx2,fma,amx-int8\n" in outs["native"] and "cpu=avx512f,avx2,fma\n" in outs["avx512"]
    assert outs["native"].split("bits=")[1] == outs["avx512"].split("bits=")[1]


def test_neon_dot_path_gives_the_base_neon_paths_bits():
    """aarch64's 4-bit GEMM on the dot-product instructions (SDOT: prefill tiles of up to 4 rows,
    decode steps) makes the base NEON and the portable paths' float steps: the same bits, whichever
    runs (ETNP_CPU=neon keeps NEON without the dot product, generic turns NEON off)."""
    import executorch_numpy_runtime as en
    if "dotprod" not in en.runtime_info()["cpu_features"]:
        pytest.skip("no NEON dot product here (not aarch64, or a CPU without FEAT_DotProd)")
    outs = {}
    for cpu in ("native", "neon", "generic"):
        r = run_with_cpu(cpu, BITS_SCRIPT)
        assert r.returncode == 0, r.stderr[-3000:]
        outs[cpu] = r.stdout
    assert "cpu=neon,dotprod\n" in outs["native"] and "cpu=neon\n" in outs["neon"] and "cpu=generic\n" in outs["generic"]
    assert outs["native"].split("bits=")[1] == outs["neon"].split("bits=")[1] == outs["generic"].split("bits=")[1]
