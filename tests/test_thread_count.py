"""The default thread count honours the process's CPU affinity (os/cpu_count.h)."""
import os
import subprocess
import sys

import pytest

CHILD = """
import os, sys
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import executorch_numpy_runtime as en
print(en.Runtime().num_threads)
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity (Linux)")
def test_one_allowed_cpu_gives_one_thread():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


def test_default_threads_within_cpu_count():
    import executorch_numpy_runtime as en

    n = en.Runtime().num_threads
    assert 1 <= n <= (os.cpu_count() or 1)
