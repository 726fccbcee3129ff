"""3x3 stride-1 convolutions by Winograd's F(2x2, 3x3) and 1-D stride-1 ones by F(3, 3) over pieces of 3
taps (native/src/delegates/xnnpack/xnn_winograd.cpp): the path is taken where the plan says (its filters
are 16/9, or 5 * ceil(taps / 3) / taps, the direct packing's bytes, exactly), and its results agree with
the direct convolution's and torch eager's, at 1 and 2 threads."""
import os
import subprocess
import sys

import numpy as np

from conftest import assert_matches, method_outputs, reference

SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import executorch_numpy_runtime as en
from conftest import method_inputs, model_path, reference
outs = {}
name = sys.argv[3]
for threads in (1, 2):
    m = en.Runtime(num_threads=threads).load_program(model_path(name)).load_method("forward")
    outs["packed"] = np.array(m.memory_stats()["packed_weights"])
    for call in range(2):  # (the second call: the per-call filter buffers reused)
        for i, o in enumerate(m(method_inputs(reference(name), "forward"))):
            outs[f"{threads}:{call}:{i}"] = np.asarray(o)
np.savez(sys.argv[2], **outs)
"""


def _run(tmp_path, switch, name="winograd_xnn"):
    import executorch_numpy_runtime
    env = dict(os.environ)
    env.pop("ETNP_WINOGRAD", None)
    if switch:
        env["ETNP_WINOGRAD"] = switch
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(executorch_numpy_runtime.__file__))
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    path = str(tmp_path / f"{name}-{switch or 'default'}.npz")
    r = subprocess.run([sys.executable, "-c", SCRIPT, tests_dir, path, name], capture_output=True, text=True, timeout=300,
                       env=env, cwd=tests_dir)
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(np.load(path))


def test_winograd_path_matches_the_direct_convolution(tmp_path):
    on, off = _run(tmp_path, None), _run(tmp_path, "off")
    # the five convolutions of >= 196 output pixels (8->16, 16->20, 20->20, 20->36 channels and a
    # dilated 20->24) hold
    # 16 transformed [IC x OC] filters instead of one [9 * IC x OC]; the output columns are packed
    # in panels of 16: 7 more rows of IC floats per panel column. The 7x6 one stays direct.
    panels = lambda oc: (oc + 15) // 16 * 16  # noqa: E731
    extra = 7 * 4 * sum(ic * panels(oc) for ic, oc in [(8, 16), (16, 20), (20, 20), (20, 36), (20, 24)])
    assert int(on["packed"]) - int(off["packed"]) == extra
    _check(on, off, "winograd_xnn", atol=2e-6)  # (rounding apart only: outputs ~0.5)


def _check(on, off, name, atol):
    want = method_outputs(reference(name), "forward")
    for threads in (1, 2):
        for call in range(2):
            got_on = [on[f"{threads}:{call}:{i}"] for i in range(len(want))]
            got_off = [off[f"{threads}:{call}:{i}"] for i in range(len(want))]
            assert_matches(got_on, want, 1e-5, 1e-4)
            assert_matches(got_off, want, 1e-5, 1e-4)
            for a, b in zip(got_on, got_off):
                np.testing.assert_allclose(a, b, atol=atol, rtol=0)
    for i in range(len(want)):  # the threads split tile rows, each computed alike; calls alike
        np.testing.assert_array_equal(on[f"1:0:{i}"], on[f"2:0:{i}"])
        np.testing.assert_array_equal(on[f"1:0:{i}"], on[f"1:1:{i}"])
        np.testing.assert_array_equal(on[f"2:0:{i}"], on[f"2:1:{i}"])


def test_winograd1d_path_matches_the_direct_convolution(tmp_path):
    on, off = _run(tmp_path, None, "winograd1d_xnn"), _run(tmp_path, "off", "winograd1d_xnn")
    # 96 -> 96 channels (6 panels of 16 columns): the 7-tap convolution on 520 outputs holds 5 * 3
    # rows of 96 per panel column instead of 7, the dilated 3-tap one 5 instead of 3; the 5-tap one
    # on 508 outputs keeps its direct packing (transformed at each call)
    assert int(on["packed"]) - int(off["packed"]) == 4 * 96 * 96 * ((5 * 3 - 7) + (5 - 3))
    _check(on, off, "winograd1d_xnn", atol=1e-5)  # (outputs ~1.7)
