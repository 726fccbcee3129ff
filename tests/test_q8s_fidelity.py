"""Static int8 programs give the published ExecuTorch runtime's bits.

The npz files hold the reference runtime's outputs (forward:runtime_out:i, recorded by
tools/export_fixtures.py with upstream ExecuTorch 1.3.1 + XNNPACK). Every static-int8 node rounds
its result onto a grid, and XNNPACK decides each rounding: the int32 sum plus the int32 bias times
input scale * filter scale / output scale (convolutions, depthwise, fully connected); a fixed-point
add; the integer product of a multiply; global average pooling rounding the code, not the grid
index, to even; a ReLU6 with an observer of its own fused into the convolution before it (one
rounding onto its grid). Any other arithmetic - the same values within rounding - moves outputs by
a quantization step now and then, and a step grows with depth. Integer sums are exact on every
kernel path, so every path, thread count and fusion mode must give exactly the reference's bits.

qref_static_xnn: all of the above (tools/fixture_models/quantized_models.py: ReferenceQ8), its
logits and a whole feature map; the build before this requantization differed from the reference
in 1 of its 20 logits and 308 of the 3072 feature-map values. qsilu_dw_static_xnn: a depthwise
convolution behind a fused SiLU chain (6 outputs differed).
"""

import numpy as np
import pytest

from conftest import model_path, reference, run_with_cpu

NAMES = ["qref_static_xnn", "qsilu_dw_static_xnn"]

SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import executorch_numpy_runtime as en
from conftest import model_path, reference
bad = []
for name in sys.argv[2:]:
    ref = reference(name)
    for threads in (1, 2):
        outs = en.Runtime(num_threads=threads).load_program(model_path(name)).load_method("forward")([ref["forward:in:0"]])
        for i, o in enumerate(outs):
            want = ref["forward:runtime_out:%d" % i]
            n = int((np.asarray(o).view(np.int32) != want.view(np.int32)).sum())
            if n:
                bad.append("%s:%d:%d threads: %d of %d differ" % (name, i, threads, n, want.size))
print("bad=%r" % bad)
"""


def outputs_differing(name, threads):
    import executorch_numpy_runtime as en
    ref = reference(name)
    outs = en.Runtime(num_threads=threads).load_program(model_path(name)).load_method("forward")([ref["forward:in:0"]])
    wants = [ref[k] for k in sorted(k for k in ref if k.startswith("forward:runtime_out:"))]
    assert len(outs) == len(wants) > 0
    return [int((np.asarray(o) != w).sum()) for o, w in zip(outs, wants)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("threads", [1, 2])
def test_static_int8_gives_reference_runtime_bits(rt, name, threads):
    differing = outputs_differing(name, threads)
    assert not any(differing), f"{name}, {threads} thread(s): values differing from the reference runtime's per output: {differing}"


@pytest.mark.parametrize("cpu", ["generic", "avx2"])
def test_static_int8_forced_paths_give_reference_bits(cpu):
    r = run_with_cpu(cpu, SCRIPT, *NAMES)
    assert r.returncode == 0 and "bad=[]" in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])


@pytest.mark.parametrize("mode", ["off", "steps"])
def test_static_int8_fusion_modes_give_reference_bits(mode, monkeypatch):
    # the requantizing clamp is fused in every mode (XNNPACK's own graph rewrite), so node by node
    # gives the reference's bits too
    monkeypatch.setenv("ETNP_XNN_FUSION", mode)
    r = run_with_cpu("native", SCRIPT, *NAMES)
    assert r.returncode == 0 and "bad=[]" in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])
