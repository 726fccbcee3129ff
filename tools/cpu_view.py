"""Run a benchmark process as if the machine had only the CPUs it is pinned to.

The reference runtime (upstream ExecuTorch + XNNPACK) has no thread setting: its pthreadpool takes
as many threads as the machine has CPUs, counted from sysfs (/sys/devices/system/cpu/possible,
present, online), not from the process's affinity. Pinned with `taskset -c 0` on a 2-CPU machine it
runs two threads on one core - not what it does on a one-core machine, and measured here 4-44 %
slower (ViT-tiny 9.2 vs 6.4 ms, MobileNetV3-small 0.73 vs 0.60 ms; the tools' "1 thread" reference
figures before the twentieth session were taken that way). `prefix(n)` is a command prefix that
runs the command in its own mount namespace with those three files showing CPUs 0..n-1, so the
reference sizes its pool to the n cores it is pinned to (`taskset -c 0-(n-1)`, as the tools pin
both runtimes); ours gets the same view (its thread count is set explicitly anyway). Needs root and
util-linux `unshare` (Linux); elsewhere, or where the machine has no more than n CPUs, the prefix is
empty and `note(n)` says why.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile

SYS_CPU = "/sys/devices/system/cpu"
_FILES = ("possible", "present", "online")
_dir = None


def count_cpus(cpus: str) -> int:
    """The number of CPUs in a CPU list, as sysfs and taskset write them ("0", "0-1", "0,2-3")."""
    n = 0
    for part in cpus.strip().split(","):
        a, _, b = part.partition("-")
        n += int(b) - int(a) + 1 if b else 1
    return n


def online_cpus() -> int:
    """The number of CPUs sysfs lists as online (what pthreadpool / cpuinfo count), or 0."""
    try:
        return count_cpus(open(os.path.join(SYS_CPU, "online")).read())
    except OSError:
        return 0


def note(n: int) -> str:
    """Why prefix(n) is empty ('' where it is not)."""
    if online_cpus() <= n:
        return ""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "not root: the reference's pool keeps one thread per CPU of the machine"
    if not shutil.which("unshare"):
        return "no unshare: the reference's pool keeps one thread per CPU of the machine"
    return ""


def prefix(n: int) -> list:
    """A command prefix running the command with sysfs showing CPUs 0..n-1 (empty: see note(n))."""
    global _dir
    if n <= 0 or online_cpus() <= n or note(n):
        return []
    if _dir is None:
        _dir = tempfile.mkdtemp(prefix="cpu_view")
        atexit.register(shutil.rmtree, _dir, True)
    f = os.path.join(_dir, f"cpus{n}")
    if not os.path.exists(f):
        with open(f, "w") as fh:
            fh.write(("0" if n == 1 else f"0-{n - 1}") + "\n")
    # (mounts made in an unshared namespace are private: the machine's own sysfs is untouched)
    script = "".join(f'mount --bind "$0" {SYS_CPU}/{x} || exit 97; ' for x in _FILES) + 'exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, f]


def reexec_pinned() -> None:
    """Re-runs this script (once) with the sysfs view of the CPUs it is pinned to: for a benchmark
    run under `taskset` by hand (tools/bench_llm.py), so the reference's pool matches the pinning."""
    if os.environ.get("ETNP_CPU_VIEW") or not hasattr(os, "sched_getaffinity"):
        return
    import sys

    pre = prefix(len(os.sched_getaffinity(0)))
    if pre:
        os.environ["ETNP_CPU_VIEW"] = "1"
        os.execvp(pre[0], pre + [sys.executable] + sys.argv)
