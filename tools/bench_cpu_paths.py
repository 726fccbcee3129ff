#!/usr/bin/env python3
"""Our own kernel paths against each other: the CPU time of zoo programs per build and ETNP_CPU path
(the portable path's measure, issue #33: ETNP_CPU=generic over ETNP_CPU=native), one thread.

    python tools/bench_cpu_paths.py --variants native:ROOT,generic:OLDROOT,generic:ROOT
                                    [--zoo DIR[,DIR...]] [--procs 2] [--min-s 1] [--max-iters 200]
                                    [--out results.json] [--core 0] [NAME ...]
    python tools/bench_cpu_paths.py --table results.json [--programs FILE]

A variant is CPU:ROOT - ETNP_CPU=CPU, the package imported from ROOT (a checkout with its built
extension, or a directory holding a copy of executorch_numpy_runtime/ with an older build: A/B of
two builds). Per program the variants run interleaved, --procs processes each (pinned with taskset to
--core, under nice); each process times its calls by process CPU time (not wall time: on a shared
machine the wall clock counts other processes' turns), at least 10 calls and --min-s seconds, and
reports their median; per variant the least of its processes' medians. Ratios are against the
first variant. Programs are NAME.pte (+ NAME.npz inputs: `forward:in:i` or `forward:call0:in:i`,
NAME*.ptd external weights) found in the --zoo directories; without names, all of them.
--table prints a Markdown table of a results file (each variant over the first; geometric means
over all programs, the int8 / 4-bit ones (q8*, full_q8*, ext_8da4w*) and the rest).
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import subprocess
import sys
import time

DEFAULT_ZOO = "/work/zoo-portable,/work/fullzoo"


def worker(root, model, min_s, max_iters):
    sys.path.insert(0, root)
    import numpy as np
    import executorch_numpy_runtime as en

    if not os.path.dirname(en.__file__).startswith(os.path.abspath(root)):
        raise SystemExit(f"imported {en.__file__}, not from {root}")
    npz = os.path.splitext(model)[0] + ".npz"
    with np.load(npz, allow_pickle=False) as z:
        keys = [k for k in z.files if k.startswith("forward:in:")] or \
               [k for k in z.files if k.startswith("forward:call0:in:")]
        keys.sort(key=lambda k: int(k.rsplit(":", 1)[1]))
        ins = [z[k] for k in keys]
    data = sorted(glob.glob(os.path.splitext(model)[0] + "*.ptd"))
    rt = en.Runtime(num_threads=1)
    prog = rt.load_program(model, data_files=data) if data else rt.load_program(model)
    m = prog.load_method("forward")
    for _ in range(3):
        m(ins)
    ts = []
    t_end = time.perf_counter() + min_s
    while len(ts) < max_iters and (len(ts) < 10 or time.perf_counter() < t_end):
        t0 = time.process_time()
        m(ins)
        ts.append(time.process_time() - t0)
    ts.sort()
    print("RESULT", json.dumps({"ms": ts[len(ts) // 2] * 1e3, "n": len(ts)}))


def find_program(zoos, name):
    for z in zoos:
        p = os.path.join(z, name + ".pte")
        if os.path.exists(p) and os.path.exists(os.path.join(z, name + ".npz")):
            return p
    return None


def is_int(name):
    return name.startswith(("q8", "full_q8", "ext_8da4w"))


def table(res, names):
    variants = None
    lines, logs = [], None
    for n in names:
        if n not in res:
            continue
        v = res[n]
        if variants is None:
            variants = list(v.keys())
            logs = [{"all": [], "int": [], "float": []} for _ in variants[1:]]
            lines.append("| program | " + " | ".join(f"{k} ms" for k in variants) + " | " +
                         " | ".join(f"{k} / first" for k in variants[1:]) + " |")
            lines.append("| --- |" + " ---: |" * (2 * len(variants) - 1))
        ms = [v.get(k) for k in variants]
        if not all(ms):
            continue
        ratios = [x / ms[0] for x in ms[1:]]
        for lg, r in zip(logs, ratios):
            lg["all"].append(math.log(r))
            lg["int" if is_int(n) else "float"].append(math.log(r))
        lines.append(f"| {n} | " + " | ".join(f"{x:.2f}" for x in ms) + " | " +
                     " | ".join(f"{r:.2f}x{' (>4)' if r > 4 else ''}" for r in ratios) + " |")
    g = lambda l: math.exp(sum(l) / len(l)) if l else float("nan")
    print("\n".join(lines))
    for k, lg in zip(variants[1:], logs):
        print(f"\n{k}: geomean {g(lg['all']):.2f}x over {len(lg['all'])} "
              f"({sum(1 for x in lg['all'] if x > math.log(4))} above 4x); int8 / 4-bit {g(lg['int']):.2f}x over "
              f"{len(lg['int'])}, others {g(lg['float']):.2f}x over {len(lg['float'])}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--variants", default="native:.,generic:.")
    ap.add_argument("--zoo", default=DEFAULT_ZOO)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--min-s", type=float, default=1.0)
    ap.add_argument("--max-iters", type=int, default=200)
    ap.add_argument("--core", default="0")
    ap.add_argument("--out", default=None)
    ap.add_argument("--table", help="print the Markdown table of this results file")
    ap.add_argument("--programs", help="with --table: the programs' order (a file, one name a line)")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker[0], a.worker[1], a.min_s, a.max_iters)
    if a.table:
        res = json.load(open(a.table))
        names = [l.strip() for l in open(a.programs) if l.strip()] if a.programs else list(res)
        return table(res, names)
    zoos = [z for z in a.zoo.split(",") if z]
    names = a.names or sorted({os.path.splitext(os.path.basename(p))[0]
                               for z in zoos for p in glob.glob(os.path.join(z, "*.pte"))})
    variants = [(c, os.path.abspath(r)) for c, r in (v.split(":", 1) for v in a.variants.split(","))]
    res = json.load(open(a.out)) if a.out and os.path.exists(a.out) else {}
    for name in names:
        model = find_program(zoos, name)
        if not model:
            print(name, "not found (or no .npz)", flush=True)
            continue
        best = [None] * len(variants)
        for _ in range(a.procs):
            for i, (cpu, root) in enumerate(variants):
                env = dict(os.environ, ETNP_CPU=cpu)
                env.pop("PYTHONPATH", None)
                cmd = ["nice", "-n", "5", "taskset", "-c", a.core, sys.executable, os.path.abspath(__file__),
                       "--min-s", str(a.min_s), "--max-iters", str(a.max_iters), "--worker", root, model]
                r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/")
                line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
                if not line:
                    print(name, cpu, root, "FAILED", r.stderr[-500:], flush=True)
                    continue
                ms = json.loads(line[0][7:])["ms"]
                best[i] = ms if best[i] is None else min(best[i], ms)
        res[name] = {f"{c}:{r}": b for (c, r), b in zip(variants, best)}
        print(f"{name:32s}", " ".join(f"{b:9.3f}" if b else "        -" for b in best),
              " ".join(f"{b / best[0]:.2f}x" for b in best[1:] if b and best[0]), flush=True)
        if a.out:
            json.dump(res, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
