#!/usr/bin/env python3
"""Latency of every program of a model zoo in ours and in the reference runtime, side by side, in one
run, at 1 and 2 threads: the ratio table and its geometric mean (the performance issue's measure).

    python tools/bench_zoo.py [--zoo /work/zoo] [--peer-python PY] [--threads 1,2] [--iters 20]
                              [--warmup 3] [--warmup-ms 100] [--rounds 1] [--pick median]
                              [--isa native|avx2|sse] [--markdown FILE] [NAME ...]

The zoo is what tools/zoo_export.py writes (NAME.pte, NAME.npz with `forward:in:i` or the first
call's `forward:call0:in:i` inputs, NAME*.ptd external weights). Each (program, runtime, thread
count) runs in its own worker process (tools/bench.py --worker), pinned with `taskset` to the same
cores for both runtimes (cores 0..T-1; the reference has no thread argument and sizes its pool by
the machine's CPU count, so both run seeing T CPUs - tools/cpu_view.py -; ours gets
num_threads=T), the two runtimes alternating per program so machine drift hits both alike;
with --rounds R, R passes over the zoo (which runtime goes first flips each pass) and each
runtime's median of its R process medians (--pick min: the least, best of R): a 2-vCPU VM's
cross-core latency switches between ~50 and ~350 ns for seconds to minutes at a time, and one
process per runtime then compares two different machines.
Prints median milliseconds and ours/reference per program, then the geometric mean and the worst
ratio per thread count; programs either runtime cannot run are listed and left out of the means.
--isa avx2 (or sse) runs both runtimes as on a CPU without AVX-512 (or without AVX): the processes
see CPUID through tools/cpuid_mask.c (built here with cc, LD_PRELOADed; Linux on a CPU with CPUID
faulting), so the reference runs the XNNPACK kernels it runs on such a machine and ours picks its
own path as it would there (runtime_info()['cpu_features'] says which) - the two compared on this
machine's cores.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_view  # noqa: E402


def zoo_inputs(npz_path):
    import numpy as np

    with np.load(npz_path, allow_pickle=False) as z:
        keys = [k for k in z.files if k.startswith("forward:in:")]
        if not keys:
            keys = [k for k in z.files if k.startswith("forward:call0:in:")]
        keys.sort(key=lambda k: int(k.rsplit(":", 1)[1]))
        return [z[k] for k in keys]


def cpuid_mask_env(isa, tmp):
    """The environment that makes a process see a CPU without AVX-512 / AVX (tools/cpuid_mask.c)."""
    if isa == "native":
        return {}
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise SystemExit("--isa needs a C compiler (cc) to build tools/cpuid_mask.c")
    lib = os.path.join(tmp, "cpuid_mask.so")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", os.path.join(HERE, "cpuid_mask.c"), "-o", lib], check=True)
    env = {"LD_PRELOAD": lib, "ETNP_MASK_ISA": isa}
    r = subprocess.run([sys.executable, "-c", "print(1)"], env=dict(os.environ, **env), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"--isa {isa}: {r.stderr.strip() or 'the CPUID mask does not load here'}")
    return env


def run_one(py, backend, model, inputs, data_files, threads, iters, warmup, tmp, warmup_ms=0.0, extra_env=None):
    cmd = [py, os.path.join(HERE, "bench.py"), "--worker", backend, "--model", model, "--inputs", inputs,
           "--iters", str(iters), "--warmup", str(warmup), "--warmup-ms", str(warmup_ms)]
    if data_files:
        cmd += ["--data-files", ",".join(data_files)]
    if backend == "ours":
        cmd += ["--threads", str(threads)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", f"0-{threads - 1}" if threads > 1 else "0"] + cmd
    cmd = cpu_view.prefix(threads) + cmd  # (the reference sizes its pool by the CPUs it sees)
    env = dict(os.environ, **(extra_env or {}))
    if backend == "peer":
        env.pop("PYTHONPATH", None)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    if r.returncode != 0 or not line:
        return None, ((r.stderr.strip().splitlines() or ["failed"])[-1])[:120]
    return json.loads(line[0][7:]), None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*")
    p.add_argument("--zoo", default="/work/zoo")
    p.add_argument("--ours-python", default=sys.executable)
    p.add_argument("--peer-python", default=os.environ.get("ETNP_PEER_PYTHON", "/work/envs/ref-venv/bin/python"))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--warmup-ms", type=float, default=100.0,
                   help="and at least this long (both runtimes; a fresh process's 2-thread calls on a 2-vCPU VM "
                        "run at 1-thread speed for ~15 ms)")
    p.add_argument("--rounds", type=int, default=1,
                   help="passes over the zoo (each a fresh process per program, runtime and thread count); "
                        "each runtime's median (or least, --pick min) of its per-pass medians")
    p.add_argument("--pick", choices=("median", "min"), default="median",
                   help="with --rounds: each runtime's median of its process medians, or the least (best of R: "
                        "where the machine's speed switches between two modes, both runtimes' fast-mode figure)")
    p.add_argument("--isa", choices=("native", "avx2", "sse"), default="native",
                   help="both runtimes as on a CPU without AVX-512 (avx2) or without AVX (sse): tools/cpuid_mask.c")
    p.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = p.parse_args()
    import numpy as np

    threads = [int(t) for t in args.threads.split(",") if t]
    models = sorted(glob.glob(os.path.join(args.zoo, "*.pte")))
    if args.names:
        models = [m for m in models if os.path.splitext(os.path.basename(m))[0] in set(args.names)]
    rows, skipped = [], []
    with tempfile.TemporaryDirectory() as tmp:
        mask_env = cpuid_mask_env(args.isa, tmp)
        progs = []  # (name, model, inputs, data files)
        for model in models:
            name = os.path.splitext(os.path.basename(model))[0]
            npz = os.path.splitext(model)[0] + ".npz"
            if not os.path.exists(npz):
                skipped.append((name, "no .npz inputs"))
                continue
            inputs = os.path.join(tmp, name + ".inputs.npz")
            np.savez(inputs, **{f"in_{i}": x for i, x in enumerate(zoo_inputs(npz))})
            progs.append((name, model, inputs, sorted(glob.glob(os.path.splitext(model)[0] + "*.ptd"))))
        # rounds are whole passes over the zoo, so that one program's samples lie minutes apart
        # (the machine's modes last seconds to minutes); in each pass the two runtimes alternate
        # per program and thread count, the one going first flipping from pass to pass
        res = {}  # (name, threads, backend) -> process medians (ms)
        failed = set()
        rounds = max(1, args.rounds)
        order = (("ours", args.ours_python), ("peer", args.peer_python))
        for rnd in range(rounds):
            for name, model, inputs, data in progs:
                for t in threads:
                    if (name, t) in failed:
                        continue
                    for be, py in (order if rnd % 2 == 0 else order[::-1]):
                        r, err = run_one(py, be, model, inputs, data, t, args.iters, args.warmup, tmp, args.warmup_ms,
                                         mask_env)
                        if err:
                            skipped.append((f"{name} ({be}, {t} thr)", err))
                            failed.add((name, t))
                            break
                        res.setdefault((name, t, be), []).append(r["median"] * 1e3)
                if rounds > 1:
                    print(f"round {rnd + 1}/{rounds}: {name}", file=sys.stderr, flush=True)
        pick = np.median if args.pick == "median" else np.min
        for name, _, _, _ in progs:
            row = {"name": name}
            for t in threads:
                if (name, t) not in failed:
                    row[t] = (float(pick(res[(name, t, "ours")])), float(pick(res[(name, t, "peer")])))
            rows.append(row)
            cells = "  ".join(f"{t}t {row[t][0]:8.2f} {row[t][1]:8.2f} {row[t][0] / row[t][1]:5.2f}x"
                              for t in threads if t in row)
            print(f"{name:32s} {cells}", flush=True)
    lines = ["| program | " + " | ".join(f"ours {t}t ms | ref {t}t ms | ratio {t}t" for t in threads) + " |",
             "|---|" + "---|---|---|" * len(threads)]
    for row in rows:
        cells = []
        for t in threads:
            cells += [f"{row[t][0]:.2f}", f"{row[t][1]:.2f}", f"{row[t][0] / row[t][1]:.2f}x"] if t in row else ["-"] * 3
        lines.append(f"| {row['name']} | " + " | ".join(cells) + " |")
    summary = []
    for t in threads:
        ratios = [row[t][0] / row[t][1] for row in rows if t in row]
        if ratios:
            gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            worst = max((row[t][0] / row[t][1], row["name"]) for row in rows if t in row)
            over = sum(r > 1.25 for r in ratios)
            summary.append(f"{t} thread(s): geometric mean {gm:.2f}x over {len(ratios)} programs, worst "
                           f"{worst[0]:.2f}x ({worst[1]}), {over} above 1.25x")
    print()
    for t in threads:
        if cpu_view.note(t):
            summary.append(f"{t} thread(s): {cpu_view.note(t)} (tools/cpu_view.py)")
    for s in summary:
        print(s)
    for name, why in skipped:
        print(f"not measured: {name}: {why}")
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write("\n".join(lines + [""] + [f"- {s}" for s in summary]) + "\n")


if __name__ == "__main__":
    main()
