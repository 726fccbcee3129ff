#!/usr/bin/env python3
"""The packed-weight cache measured: load + first call without a cache, writing it, and with a hit
(each in a fresh process pinned to --cpus), the reference runtime's load + first call, and N worker
processes' memory with and without the cache.

    python tools/weight_cache_bench.py --zoo /work/fullzoo --only full_tv_resnet50 [--workers 4]
        [--cpus 0] [--rounds 3] [--ref-python /work/.ref-venv/bin/python] [--cache-dir DIR] [--mmap]

Memory: N processes load the program (with the cache: a hit), make one call, and all hold still
while each reads /proc/self/smaps_rollup (Linux): the table gives the sum of their RSS, the sum of
their PSS (shared pages divided among the processes that map them: what N processes really cost)
and one lone process's RSS, all net of the RSS after importing the package. Times: minimum of
--rounds fresh processes each.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_view  # noqa: E402
from footprint import measure as ref_measure  # noqa: E402

CHILD = r"""
import json, os, sys, time
import numpy as np
def rollup():
    d = {}
    try:
        with open("/proc/self/smaps_rollup") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                    d[parts[0][:-1]] = int(parts[1]) / 1024.0
    except OSError:
        pass
    return d
path, cache, hold, use_mmap = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4] == "1"
with np.load(path[:-4] + ".npz") as z:
    pre = "forward:in:" if "forward:in:0" in z.files else "forward:call0:in:"  # (stateful: its first call)
    n = len([k for k in z.files if k.startswith(pre)])
    ins = [np.ascontiguousarray(z[f"{pre}{i}"]) for i in range(n)]
import executorch_numpy_runtime as en
base = rollup()
t0 = time.perf_counter()
prog = en.Runtime.get().load_program(path, weight_cache=cache or None, mmap=use_mmap)
m = prog.load_method("forward")
t1 = time.perf_counter()
m(ins)
t2 = time.perf_counter()
if hold:
    print("READY", flush=True)
    sys.stdin.readline()
r = rollup()
print("BENCH " + json.dumps(dict(load=t1 - t0, total=t2 - t0, stats=m.memory_stats(),
                                 rss=r.get("Rss", 0) - base.get("Rss", 0), pss=r.get("Pss", 0) - base.get("Pss", 0),
                                 rss_abs=r.get("Rss", 0), pss_abs=r.get("Pss", 0))), flush=True)
"""


MMAP = False  # --mmap


def child(python, path, cache, cpus, hold=False):
    cmd = cpu_view.prefix(cpu_view.count_cpus(cpus)) + \
        ["taskset", "-c", cpus, python, "-c", CHILD, path, cache, "1" if hold else "0", "1" if MMAP else "0"]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(p):
    out, err = p.communicate(timeout=1800)
    for line in out.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[6:])
    raise RuntimeError((err or out).strip().splitlines()[-1:] or "no output")


def timed(python, path, cache, cpus, rounds):
    rows = [result(child(python, path, cache, cpus)) for _ in range(rounds)]
    return min(rows, key=lambda r: r["total"])


def workers(python, path, cache, cpus, n):
    ps = [child(python, path, cache, cpus, hold=True) for _ in range(n)]
    for p in ps:  # all loaded and called once, then all read their memory while all are alive
        line = p.stdout.readline()
        if not line.startswith("READY"):
            raise RuntimeError(p.stderr.read().strip().splitlines()[-1:])
    for p in ps:
        p.stdin.write("\n")
        p.stdin.flush()
    rows = [result(p) for p in ps]
    return dict(rss=sum(r["rss"] for r in rows), pss=sum(r["pss"] for r in rows))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoo", default="/work/fullzoo")
    ap.add_argument("--only", nargs="+", metavar="NAME", required=True)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--cpus", default="0")
    ap.add_argument("--worker-cpus", default="0-%d" % (os.cpu_count() - 1))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ref-python", default="/work/.ref-venv/bin/python")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--mmap", action="store_true", help="load_program(path, mmap=True) in ours and the reference: "
                    "the program bytes the delegates do not pack (embeddings run by portable kernels) are then "
                    "page-cache pages shared by the workers too")
    args = ap.parse_args(argv)
    global MMAP
    MMAP = args.mmap
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="etnpwc-")
    os.makedirs(cache_dir, exist_ok=True)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    print("| program | cold load+1st s | write load+1st s | hit load+1st s | ref load+1st s | hit / ref | "
          f"1 proc RSS MB | {args.workers} procs RSS sum / PSS sum MB (no cache) | "
          f"{args.workers} procs RSS sum / PSS sum MB (cache) | PSS sum / 1 proc RSS (cache) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.only:
        path = os.path.join(args.zoo, name + ".pte")
        cache = os.path.join(cache_dir, name + ".etnpwc")
        if os.path.exists(cache):
            os.unlink(cache)
        cold = timed(args.python, path, "", args.cpus, args.rounds)
        write = result(child(args.python, path, cache, args.cpus))
        hit = timed(args.python, path, cache, args.cpus, args.rounds)
        ref = min((ref_measure(args.ref_python, path, args.cpus, args.mmap, env) for _ in range(args.rounds)),
                  key=lambda r: r.get("total", 1e9)) if os.path.exists(args.ref_python) else {"error": "none"}
        one = result(child(args.python, path, cache, args.worker_cpus, hold=False))
        plain = workers(args.python, path, "", args.worker_cpus, args.workers)
        shared = workers(args.python, path, cache, args.worker_cpus, args.workers)
        rt = ref.get("total")
        print(f"| {name} | {cold['total']:.3f} | {write['total']:.3f} | {hit['total']:.3f} | "
              f"{rt if rt is None else round(rt, 3)} | {hit['total'] / rt if rt else float('nan'):.2f}x | {one['rss']:.0f} | "
              f"{plain['rss']:.0f} / {plain['pss']:.0f} | {shared['rss']:.0f} / {shared['pss']:.0f} | "
              f"{shared['pss'] / max(one['rss'], 1e-9):.2f}x |", flush=True)
        print(json.dumps(dict(name=name, cold=cold, write=write, hit=hit, ref=ref, one=one, plain=plain,
                              shared=shared, cache_mb=os.path.getsize(cache) / 2 ** 20)), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
