#!/usr/bin/env python3
"""Where the memory and the start-up time go: ours against the reference runtime, side by side.

    python tools/footprint.py --zoo /work/fullzoo [--only NAME ...] [--cpus 0] [--rounds 1]
        [--ref-python /work/.ref-venv/bin/python] [--mmap] [--markdown]

For every NAME.pte (with its NAME.npz inputs, the zoo's layout: ``forward:in:i``) each runtime runs
in a fresh process pinned to ``--cpus`` (taskset: the reference has no thread setting; both see that
many CPUs in sysfs - tools/cpu_view.py - so its pool does not put two threads on one core), which
 1. imports the package and notes its RSS (the baseline: what import costs is not the program's),
 2. resets the peak RSS (/proc/self/clear_refs), loads the program, loads ``forward`` (the
    reference loads lazily: both are timed as load + first call) and makes the first call,
 3. makes 3 more calls and reads the steady RSS and the peak since step 2 (VmHWM).
Reported per program and runtime: net peak RSS and net steady RSS over the baseline, load + first
call time (wall, and the process's CPU time: steadier where other work shares the machine), and for ours the breakdown the core reports (``Method.memory_stats()``: program bytes
resident, packed weights, constant copies, the planned arena, delegate value buffers, scratch) when
the build has it. Ratios are ours / reference. Whole-process figures, one process per cell: run
``--rounds 3`` and the minimum of each figure is kept.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_view  # noqa: E402

CHILD = r"""
import json, os, sys, time
import numpy as np
def status():
    d = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":")
                d[k] = int(v.split()[0]) / 1024.0
    return d
import executorch_numpy_runtime as en
path, use_mmap = sys.argv[1], sys.argv[2] == "1"
with np.load(path[:-4] + ".npz") as z:
    pre = "forward:in:" if "forward:in:0" in z.files else "forward:call0:in:"  # (stateful: its first call)
    n = len([k for k in z.files if k.startswith(pre)])
    ins = [np.ascontiguousarray(z[f"{pre}{i}"]) for i in range(n)]
base = status()["VmRSS"]
try:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM to the current RSS
except OSError:
    pass
t0 = time.perf_counter()
c0 = time.process_time()
rt = en.Runtime.get()
prog = rt.load_program(path, mmap=True) if use_mmap else rt.load_program(path)
t1 = time.perf_counter()
m = prog.load_method("forward")
t2 = time.perf_counter()
m(ins)
t3 = time.perf_counter()
c3 = time.process_time()
first = status()
for _ in range(3):
    m(ins)
s = status()
stats = {}
if hasattr(m, "memory_stats"):
    stats = m.memory_stats()
print("FOOTPRINT " + json.dumps(dict(base=base, peak=s["VmHWM"] - base, steady=s["VmRSS"] - base,
                                     after_first=first["VmRSS"] - base, load=t1 - t0, method=t2 - t1,
                                     first_call=t3 - t2, total=t3 - t0, cpu_total=c3 - c0, stats=stats)))
"""


def measure(python: str, path: str, cpus: str, use_mmap: bool, env=None) -> dict:
    cmd = cpu_view.prefix(cpu_view.count_cpus(cpus)) + \
        ["taskset", "-c", cpus, python, "-c", CHILD, path, "1" if use_mmap else "0"]
    # (the reference runs from / : `python -c` puts the working directory first on sys.path, and
    # run from a checkout it would import that checkout's package instead of its own)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, cwd="/" if env is not None else None)
    for line in r.stdout.splitlines():
        if line.startswith("FOOTPRINT "):
            return json.loads(line[len("FOOTPRINT "):])
    tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"error": tail[0][:200]}


def best(rows):
    ok = [r for r in rows if "error" not in r]
    if not ok:
        return rows[0]
    out = dict(ok[0])
    for k in ("peak", "steady", "after_first", "load", "method", "first_call", "total", "cpu_total"):
        out[k] = min(r[k] for r in ok)
    return out


def mb(x):
    return f"{x:.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoo", default="/work/fullzoo", help="folder of NAME.pte + NAME.npz")
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--cpus", default="0", help="taskset CPU list for both runtimes (default 0: one thread)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--ref-python", default="/work/.ref-venv/bin/python")
    ap.add_argument("--python", default=sys.executable, help="the interpreter that imports our package")
    ap.add_argument("--mmap", action="store_true", help="load_program(path, mmap=True) in both")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)
    names = args.only or sorted(f[:-4] for f in os.listdir(args.zoo)
                                if f.endswith(".pte") and os.path.exists(os.path.join(args.zoo, f[:-4] + ".npz")))
    have_ref = os.path.exists(args.ref_python)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the reference must import its own package
    rows = []
    print("| program | file MB | ours peak MB | ref peak MB | peak ratio | ours steady MB | ref steady MB | "
          "ours load+1st s | ref load+1st s | time ratio | ours CPU s | ref CPU s | CPU ratio | ours breakdown MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        path = os.path.join(args.zoo, name + ".pte")
        ours = best([measure(args.python, path, args.cpus, args.mmap) for _ in range(args.rounds)])
        ref = best([measure(args.ref_python, path, args.cpus, args.mmap, env) for _ in range(args.rounds)]) \
            if have_ref else {"error": "no reference venv"}
        size = os.path.getsize(path) / 2 ** 20
        rows.append(dict(name=name, file_mb=size, ours=ours, ref=ref))
        if "error" in ours:
            print(f"| {name} | {size:.0f} | error: {ours['error']} |")
            continue
        st = ours.get("stats") or {}
        brk = ", ".join(f"{k} {v / 2 ** 20:.0f}" for k, v in st.items() if isinstance(v, (int, float)) and v >= 2 ** 19)
        if "error" in ref:
            print(f"| {name} | {size:.0f} | {mb(ours['peak'])} | - | - | {mb(ours['steady'])} | - | "
                  f"{ours['total']:.2f} | - | - | {ours['cpu_total']:.2f} | - | - | {brk} |")
            continue
        print(f"| {name} | {size:.0f} | {mb(ours['peak'])} | {mb(ref['peak'])} | {ours['peak'] / max(ref['peak'], 1):.2f}x | "
              f"{mb(ours['steady'])} | {mb(ref['steady'])} | {ours['total']:.2f} | {ref['total']:.2f} | "
              f"{ours['total'] / max(ref['total'], 1e-9):.2f}x | {ours['cpu_total']:.2f} | {ref['cpu_total']:.2f} | "
              f"{ours['cpu_total'] / max(ref['cpu_total'], 1e-9):.2f}x | {brk} |", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
