"""Load-time fusion in the XNNPACK delegate (residual adds into GEMMs, the input transpose into the
first convolution, band pipelines around depthwise convolutions): it happens where expected, and
the step-by-step path each fused node falls back to (ETNP_XNN_FUSION=steps) and the unfused graph
(=off) give the reference answers too. The mode is read once per process: subprocesses."""
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import gc
import sys
sys.path.insert(0, sys.argv[1])
import os
import numpy as np
import executorch_numpy_runtime as en
PROFILE = os.environ.get("FUSION_TEST_PROFILE") == "1"
from conftest import assert_matches, method_inputs, method_outputs, model_path, reference
from test_fixtures import TOLERANCES
for threads in (1, 2):
    for name in sys.argv[2:]:
        ref = reference(name)
        m = en.Runtime(num_threads=threads).load_program(model_path(name)).load_method("forward")
        atol, rtol = TOLERANCES[name]
        for _ in range(2):  # the second call runs on reused buffers
            assert_matches(m(method_inputs(ref, "forward")), method_outputs(ref, "forward"), atol, rtol, name)
        if PROFILE:  # each delegate call's node list (method.profile), as "XNNPACK delegate profile: N nodes" + rows
            calls = {}
            for e in m.profile(method_inputs(ref, "forward")).calls[-1]:
                if e.depth == 1:
                    calls.setdefault(e.instruction, []).append(e)
            for evs in calls.values():
                print(f"XNNPACK delegate profile: {len(evs)} nodes", file=sys.stderr)
                for e in evs:
                    print(f"{e.node:4d} {e.name:<32} {e.shape:<18} {e.duration_us:9.1f}", file=sys.stderr)
        del m
        gc.collect()
print("ok")
"""

MODELS = ["mobilenet_v2_xnn", "conv_inputs_xnn", "small_cnn_xnn", "act_cnn_xnn", "encoder_xnn", "mlp_xnn", "qmlp_dyn_xnn", "qcnn_static_xnn",
          "qadd_constant_xnn", "qact_cnn_static_xnn", "qsilu_dw_static_xnn", "resblock1d_xnn", "winograd_xnn",
          "winograd1d_xnn"]


def run(mode, models, profile=False):
    import executorch_numpy_runtime
    env = dict(os.environ, ETNP_XNN_FUSION=mode)
    if profile:
        env["FUSION_TEST_PROFILE"] = "1"
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(executorch_numpy_runtime.__file__))
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(executorch_numpy_runtime.__file__))
    return subprocess.run([sys.executable, "-c", SCRIPT, root] + models, capture_output=True, text=True,
                          timeout=300, env=env, cwd=tests_dir)


@pytest.mark.parametrize("mode", ["off", "steps", "on"])
def test_fusion_modes_match_torch(mode):
    r = run(mode, MODELS)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def test_mobilenet_fusions_happen():
    r = run("on", ["mobilenet_v2_xnn"], profile=True)
    assert r.returncode == 0, r.stderr[-3000:]
    prof = r.stderr
    # the delegate's node list, as the profile prints it when the method is released
    assert "XNNStaticTranspose+Conv2d " in prof
    assert "XNNDepthwiseConv2d+Conv2d " in prof                 # first block: projection only
    assert "XNNConv2d+DepthwiseConv2d+Conv2d+Add " in prof      # expansion, projection, residual
    assert "XNNConv2d+Add " in prof                             # residual into a lone projection
    assert "XNNStaticTranspose " not in prof.split("XNNGlobalAvgPooling2d")[0]
    off = run("off", ["mobilenet_v2_xnn"], profile=True).stderr
    nodes = lambda text: [int(l.split()[3]) for l in text.splitlines() if l.startswith("XNNPACK delegate profile:")]
    assert nodes(prof) and nodes(off) and max(nodes(prof)) < max(nodes(off)) == 67


def test_input_convolutions_read_nchw_in_place():
    r = run("on", ["conv_inputs_xnn"], profile=True)
    assert r.returncode == 0, r.stderr[-3000:]
    # every convolution reads its network input through a fused transpose (one delegate, 2 runtimes)
    assert r.stderr.count("XNNStaticTranspose+Conv2d") == 8, r.stderr[-3000:]
    # the clamp after the last convolution is its output range (a Clamp node fused in)
    assert r.stderr.count("XNNStaticTranspose+Conv2d+Clamp ") == 2, r.stderr[-3000:]


def test_static_int8_clamp_joins_its_convolution():
    r = run("on", ["qcnn_static_xnn"], profile=True)
    assert r.returncode == 0, r.stderr[-3000:]
    # the hardtanh after the second convolution (a separate Clamp node in int8 graphs)
    assert "XNNConv2d+Clamp " in r.stderr and "XNNClamp " not in r.stderr, r.stderr[-3000:]


def test_elementwise_chains_run_as_one_step():
    # consecutive elementwise nodes, each reading an earlier one's output, run chunk by chunk as
    # one profiled step (the int8 grids' Convert nodes included); node by node with fusion off
    on = run("on", ["qadd_constant_xnn"], profile=True)
    assert on.returncode == 0, on.stderr[-3000:]
    assert "XNNConvert+Add+Convert " in on.stderr, on.stderr[-3000:]
    off = run("off", ["qadd_constant_xnn"], profile=True)
    assert off.returncode == 0 and "XNNConvert+Add" not in off.stderr, off.stderr[-3000:]


def test_convolutions_run_the_chains_after_them():
    # a chain of elementwise nodes reading a float convolution's output is handed to it, which runs
    # the chain on its output rows as it finishes them (one profiled step); the grouped
    # convolution keeps the plain path but is profiled with its chain too
    on = run("on", ["act_cnn_xnn"], profile=True)
    assert on.returncode == 0, on.stderr[-3000:]
    for fused in ("XNNStaticTranspose+Conv2d+Sigmoid+Multiply ", "XNNConv2d+Hardswish ",
                  "XNNDepthwiseConv2d+Sigmoid+Multiply ", "XNNConv2d+Add+Gelu ", "XNNConv2d+Sigmoid "):
        assert fused in on.stderr, (fused, on.stderr[-3000:])
    off = run("off", ["act_cnn_xnn"], profile=True)
    assert off.returncode == 0 and "Conv2d+Sigmoid" not in off.stderr and "Conv2d+Hardswish" not in off.stderr, off.stderr[-3000:]
    qon = run("on", ["qact_cnn_static_xnn"], profile=True)  # static int8: the int8 GEMM's blocks
    assert qon.returncode == 0 and "XNNConv2d+Convert+Hardswish+Convert " in qon.stderr, qon.stderr[-3000:]


def test_conv1d_neighbours_fuse_into_the_convolution():
    # a Conv1d between NCHW-layout nodes ([N, C, L, 1]) writes NCHW itself - no transpose back -
    # with the LeakyReLU after it, the residual add, and the LeakyReLU of the residual sum (a second
    # output: the sum is read by the next add too) fused in (xnn_fuse.cpp); =off keeps every node
    on = run("on", ["resblock1d_xnn"], profile=True)
    assert on.returncode == 0, on.stderr[-3000:]
    prof = on.stderr
    for fused in ("XNNStaticTranspose+Conv2d+StaticTranspose+(LeakyReLU) ",  # the first: its result is a residual
                  "XNNStaticTranspose+Conv2d+StaticTranspose+LeakyReLU ",
                  "XNNStaticTranspose+Conv2d+StaticTranspose+Add+(LeakyReLU) ",
                  "XNNStaticTranspose+Conv2d+StaticTranspose+Add+LeakyReLU ",
                  "XNNStaticTranspose+Conv2d+StaticTranspose+Tanh ",
                  "XNNStaticTranspose+Conv2d+StaticTranspose+Add+Add+(LeakyReLU) "):  # two residuals
        assert fused in prof, (fused, prof[-3000:])
    # per runtime: all 1-D convolutions with 8k output channels (7), not the last one (4 channels),
    # and the 2-D one of one kernel row whose result is the NCHW graph output
    assert prof.count("+Conv2d+StaticTranspose") == 2 * 8, prof[-3000:]
    # the LeakyReLU of the upsampled signal, written twice in the model, is computed once
    assert prof.count("XNNLeakyReLU ") == 2 * 1, prof[-3000:]
    off = run("off", ["resblock1d_xnn"], profile=True)
    assert off.returncode == 0 and "Conv2d+StaticTranspose" not in off.stderr, off.stderr[-3000:]


SAME = r"""
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import executorch_numpy_runtime as en
from conftest import method_inputs, model_path, reference
outs = {}
for threads in (1, 2):
    for name in sys.argv[3:]:
        m = en.Runtime(num_threads=threads).load_program(model_path(name)).load_method("forward")
        for i, o in enumerate(m(method_inputs(reference(name), "forward"))):
            outs[f"{name}:{threads}:{i}"] = np.asarray(o)
np.savez(sys.argv[2], **outs)
"""


def saved_by_mode(script, args, tmp_path):
    """{mode: the arrays `script` saved} for fusion on and off: each mode in its own process,
    running `script` with argv [tests dir, the .npz path] + args."""
    import executorch_numpy_runtime
    import numpy as np
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    got = {}
    for mode in ("on", "off"):
        env = dict(os.environ, ETNP_XNN_FUSION=mode)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(executorch_numpy_runtime.__file__))
        path = str(tmp_path / f"{mode}.npz")
        r = subprocess.run([sys.executable, "-c", script, tests_dir, path] + args, capture_output=True, text=True,
                           timeout=300, env=env, cwd=tests_dir)
        assert r.returncode == 0, r.stderr[-3000:]
        got[mode] = dict(np.load(path))
    return got


@pytest.mark.parametrize("models", [["act_cnn_xnn", "qact_cnn_static_xnn", "mobilenet_v2_xnn", "qadd_constant_xnn",
                                     "qsilu_dw_static_xnn"]])
def test_fusion_does_not_change_results(models, tmp_path):
    # fused units compute the same arithmetic as the nodes one by one: bit-identical outputs (also
    # where a fused chain hands a static-int8 depthwise convolution float32 grid points instead of
    # codes: qsilu_dw_static_xnn, whose float32-kernel sums differ from the integer ones in 6 outputs)
    import numpy as np
    got = saved_by_mode(SAME, models, tmp_path)
    assert got["on"].keys() == got["off"].keys() and got["on"]
    for k in got["on"]:
        np.testing.assert_array_equal(got["on"][k], got["off"][k], err_msg=k)


CONVERTS = r"""
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import executorch_numpy_runtime as en
from conftest import model_path
m = en.Runtime(num_threads=1).load_program(model_path(sys.argv[3])).load_method("forward")
inp = [np.array([[5, 7, 9, 11]], np.int64), np.array([0], np.int64)]
out = np.asarray(m(inp)[0])
converts = sum(1 for e in m.profile(inp).calls[-1] if e.depth == 1 and e.name.startswith("XNNConvert"))
np.savez(sys.argv[2], out=out, converts=converts)
"""


def test_repeated_converts_merge(tmp_path):
    # an LLM layer quantizes one normalised input once per linear (q, k, v; gate, up): the repeated
    # Convert nodes are merged into the first, with bit-identical logits
    import numpy as np
    got = saved_by_mode(CONVERTS, ["llm_8da4w_kv"], tmp_path)
    assert 0 < int(got["on"]["converts"]) < int(got["off"]["converts"]), (got["on"]["converts"], got["off"]["converts"])
    np.testing.assert_array_equal(got["on"]["out"], got["off"]["out"])
