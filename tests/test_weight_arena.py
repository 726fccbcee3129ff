"""The weight arena (native/src/util/weight_arena.h, issue #29): 4-bit filters of 64 KiB and more,
packed while a delegate loads, are placed one after another in chunks backed by huge pages where the
OS has them free (a decode step streams them: one TLB entry and prefetch stream per 2 MiB), and each
chunk goes back to the OS with its program.

q8da4w_wide_xnn: 8da4w linears 256 -> 1024 -> 256 (128 KiB of nibbles a filter), exported by
tools/export_fixtures.py; its npz holds the eager outputs (forward:out:0) and the reference
runtime's (forward:runtime_out:0: upstream ExecuTorch 1.3.1 + XNNPACK).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import method_inputs, model_path, reference

NAME = "q8da4w_wide_xnn"
# outputs up to ~0.43; seen 6e-8 off the reference runtime (float steps in another order) and 2.1e-3
# off eager (one scale a tensor there, one a row in XNNPACK's dynamic quantization)
RUNTIME_ATOL, EAGER_ATOL = 1e-5, 5e-3
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="resident memory read from /proc (Linux)")

CHILD = r"""
import gc, json, sys, numpy as np
import executorch_numpy_runtime as en
def rss():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmRSS:"))
path, loads = sys.argv[1], int(sys.argv[2])
x = np.load(path[:-4] + ".npz")["forward:in:0"]
rt, seen, out = en.Runtime(num_threads=1), [], None
for i in range(loads):
    m = rt.load_program(path).load_method("forward")
    out = np.array(m([x])[0])
    stats = m.memory_stats()
    del m
    gc.collect()
    seen.append(rss())
np.save(sys.argv[3], out)
print(json.dumps(dict(rss=seen, stats=stats)))
"""


def _child(tmp_path, loads, **env):
    out = tmp_path / ("out_%d_%s.npy" % (loads, "_".join(env.values()) or "default"))
    r = subprocess.run([sys.executable, "-c", CHILD, model_path(NAME), str(loads), str(out)],
                       env=dict(os.environ, **env), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), np.load(out)


def test_matches_reference_runtime_and_eager():
    ref = reference(NAME)
    for threads in (1, 2):
        m = en.Runtime(num_threads=threads).load_program(model_path(NAME)).load_method("forward")
        out = m(method_inputs(ref, "forward"))[0]
        np.testing.assert_allclose(out, ref["forward:runtime_out:0"], atol=RUNTIME_ATOL, rtol=0)
        np.testing.assert_allclose(out, ref["forward:out:0"], atol=EAGER_ATOL, rtol=0)
        # the filters stay 4-bit in the arena: two 256 x 1024 filters, half a byte a weight plus
        # their group scales and column constants (well under a float32 copy's 2 MiB)
        assert 2 * 256 * 1024 // 2 <= m.memory_stats()["packed_weights"] < 2 * 256 * 1024


def test_huge_pages_off_gives_the_same_bits(tmp_path):
    """ETNP_HUGE_PAGES=0 (plain pages for the arena) changes where the weights live, not the results."""
    _, on = _child(tmp_path, 1)
    _, off = _child(tmp_path, 1, ETNP_HUGE_PAGES="0")
    assert np.array_equal(on, off)
    ref = reference(NAME)
    np.testing.assert_allclose(on, ref["forward:runtime_out:0"], atol=RUNTIME_ATOL, rtol=0)


@linux
def test_unloaded_programs_give_their_chunks_back(tmp_path):
    """60 loads and unloads of the program: resident memory stays where it was after the first ten
    (an arena block kept after its program is gone would add ~300 KB a load - 15 MB over the last 50 -,
    a chunk kept 2 MiB; the bound leaves room for an interpreter's own heap, PyPy's JIT included)."""
    row, _ = _child(tmp_path, 60)
    rss = row["rss"]
    assert row["stats"]["packed_weights"] > 256 * 1024  # (the blocks the arena held)
    assert rss[-1] - rss[9] < 6 * 2 ** 20, rss
