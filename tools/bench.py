#!/usr/bin/env python3
"""Side-by-side latency of one .pte model on several backends, in one run.

    python tools/bench.py --model tests/models/mobilenet_v2_xnn.pte --backend ours,torch,peer \
        [--iters 100] [--warmup 10] [--threads 1] [--torch-python PY] [--peer-python PY]

Backends (each timed in its own worker process, same seeded input, warm-up then N timed runs):
  ours   this checkout's executorch_numpy_runtime (the interpreter running this script)
  peer   the published executorch-numpy-runtime wheel, in the interpreter given by --peer-python
         (a Python 3.12 venv with `pip install executorch-numpy-runtime`)
  torch  torch eager on the same model and weights (rebuilt by tools/export_fixtures.py), in the
         interpreter given by --torch-python (an env with torch; default: this one)
Backends that cannot run are reported and skipped; neither torch nor the peer is a dependency.
Prints min / median latency, throughput and each backend's median relative to ours.

    python tools/bench.py --model M.pte --parallel-runtimes 2 [--iters 200]

measures what releasing the GIL buys: the same total number of calls made (a) one after another on
one Runtime, (b) from N threads sharing one Runtime (serialised by its lock) and (c) from N
threads each with its own Runtime (every Runtime single-threaded), and prints (a)/(c), the
speed-up of parallel Runtimes.
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
ROOT = os.path.dirname(HERE)


def timings(fn, warmup, iters, warmup_ms=0.0):
    # at least `warmup` calls and `warmup_ms` milliseconds of them: on the project's 2-vCPU VM a
    # fresh process's 2-thread calls run at 1-thread speed for its first ~15 ms (the idle second
    # vCPU coming up to speed), which a few warm-up calls of a small model do not cover
    t0 = time.perf_counter()
    done = 0
    while done < warmup or (time.perf_counter() - t0) * 1e3 < warmup_ms:
        fn()
        done += 1
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return {"min": ts[0], "median": ts[len(ts) // 2]}


def worker(args):
    import numpy as np

    with np.load(args.inputs) as z:
        ins = [z[k] for k in sorted(z.files, key=lambda k: int(k.split("_")[1]))]
    res = {}
    if args.worker in ("ours", "peer"):
        if args.worker == "ours":
            sys.path.insert(0, ROOT)
        import executorch_numpy_runtime as en

        t0 = time.perf_counter()
        rt = en.Runtime(num_threads=args.threads) if args.threads and args.worker == "ours" else en.Runtime.get()
        data = [f for f in (args.data_files or "").split(",") if f]
        method = (rt.load_program(args.model, data_files=data) if data else rt.load_program(args.model)).load_method("forward")
        res["load_ms"] = (time.perf_counter() - t0) * 1e3
        res.update(timings(lambda: method(ins), args.warmup, args.iters, args.warmup_ms))
        res["out"] = np.asarray(method(ins)[0]).ravel()[:8].tolist()
    else:  # torch eager
        import torch

        sys.path.insert(0, HERE)
        import export_fixtures as ef

        if args.threads:
            torch.set_num_threads(args.threads)
        name = os.path.splitext(os.path.basename(args.model))[0]
        spec = ef.fixtures()[name]
        model, _ = spec["methods"]["forward"]
        model = model.eval()
        for mod in model.modules():  # the same statistics export_one() sets before export
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
        tins = [torch.from_numpy(x) for x in ins]
        with torch.no_grad():
            res.update(timings(lambda: model(*tins), args.warmup, args.iters, args.warmup_ms))
    print("RESULT " + json.dumps(res))


def parallel_runtimes(args):
    import threading

    import numpy as np

    sys.path.insert(0, ROOT)
    import executorch_numpy_runtime as en

    n, iters = args.parallel_runtimes, args.iters
    ref = os.path.splitext(args.model)[0] + ".npz"
    if os.path.exists(ref):
        with np.load(ref) as z:
            ins = [z[k] for k in sorted(k for k in z.files if k.startswith("forward:in:"))]
    else:
        meta = en.Runtime.get().load_program(args.model).load_method("forward").metadata
        rng = np.random.default_rng(0)
        ins = [rng.standard_normal(v.shape).astype(v.dtype) for v in meta.inputs]

    def load(rt):
        m = rt.load_program(args.model).load_method("forward")
        for _ in range(args.warmup):
            m(ins)
        return m

    def threaded(methods):
        barrier = threading.Barrier(n + 1)

        def run(m):
            barrier.wait()
            for _ in range(iters):
                m(ins)

        ts = [threading.Thread(target=run, args=(m,)) for m in methods]
        for t in ts:
            t.start()
        barrier.wait()
        t0 = time.perf_counter()
        for t in ts:
            t.join()
        return time.perf_counter() - t0

    one = load(en.Runtime(num_threads=1))
    t0 = time.perf_counter()
    for _ in range(n * iters):
        one(ins)
    serial = time.perf_counter() - t0
    shared = threaded([one] * n)
    own = threaded([load(en.Runtime(num_threads=1)) for _ in range(n)])
    calls = n * iters
    print(f"model {args.model}: {calls} calls, {n} threads, every Runtime num_threads=1, {os.cpu_count()} CPUs")
    print(f"{'mode':32s} {'wall s':>8s} {'calls/s':>9s} {'speed-up':>9s}")
    for name, t in (("serial, 1 Runtime", serial), (f"{n} threads, 1 shared Runtime", shared),
                    (f"{n} threads, {n} Runtimes", own)):
        print(f"{name:32s} {t:8.3f} {calls / t:9.1f} {serial / t:8.2f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--backend", default="ours,torch,peer")
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--warmup-ms", type=float, default=0.0, help="warm up for at least this long too (ms)")
    p.add_argument("--threads", type=int, default=None, help="threads for every backend (default: theirs)")
    p.add_argument("--torch-python", default=sys.executable)
    p.add_argument("--peer-python", default=os.environ.get("ETNP_PEER_PYTHON", ""))
    p.add_argument("--parallel-runtimes", type=int, default=0, metavar="N",
                   help="instead: speed-up of N Runtimes called from N threads (ours only)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--inputs", help=argparse.SUPPRESS)
    p.add_argument("--data-files", help=argparse.SUPPRESS)  # comma-separated .ptd files (tools/bench_zoo.py)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    if args.parallel_runtimes:
        return parallel_runtimes(args)

    import numpy as np

    ref = os.path.splitext(args.model)[0] + ".npz"
    with tempfile.TemporaryDirectory() as tmp:
        inputs = os.path.join(tmp, "inputs.npz")
        if os.path.exists(ref):  # the fixture's seeded inputs
            with np.load(ref) as z:
                ins = [z[k] for k in sorted(k for k in z.files if k.startswith("forward:in:"))]
        else:
            sys.path.insert(0, ROOT)
            import executorch_numpy_runtime as en

            meta = en.Runtime.get().load_program(args.model).load_method("forward").metadata
            rng = np.random.default_rng(0)
            ins = [rng.standard_normal(v.shape).astype(v.dtype) for v in meta.inputs]
        np.savez(inputs, **{f"in_{i}": x for i, x in enumerate(ins)})
        results = {}
        for be in [b.strip() for b in args.backend.split(",") if b.strip()]:
            py = {"ours": sys.executable, "torch": args.torch_python, "peer": args.peer_python}.get(be)
            if not py:
                print(f"{be:6s}: skipped (no interpreter; pass --{be}-python)")
                continue
            cmd = [py, os.path.abspath(__file__), "--worker", be, "--model", os.path.abspath(args.model), "--inputs",
                   inputs, "--iters", str(args.iters), "--warmup", str(args.warmup)]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            env = dict(os.environ)
            if be == "peer":  # never let this checkout shadow the published wheel
                env.pop("PYTHONPATH", None)
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
            line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
            if r.returncode != 0 or not line:
                print(f"{be:6s}: skipped ({(r.stderr.strip().splitlines() or ['failed'])[-1]})")
                continue
            results[be] = json.loads(line[0][7:])
    base = results.get("ours", {}).get("median")
    print(f"\nmodel {args.model}, threads={args.threads or 'default'}, {args.iters} iterations after {args.warmup} warm-up")
    print(f"{'backend':8s} {'min ms':>9s} {'median ms':>10s} {'it/s':>8s} {'median/ours':>12s} {'load ms':>8s}")
    for be, r in results.items():
        ratio = f"{r['median'] / base:.2f}x" if base else "-"
        load = f"{r['load_ms']:.1f}" if "load_ms" in r else "-"
        print(f"{be:8s} {r['min'] * 1e3:9.3f} {r['median'] * 1e3:10.3f} {1 / r['median']:8.1f} {ratio:>12s} {load:>8s}")
    if "ours" in results and "peer" in results:
        d = max(abs(a - b) for a, b in zip(results["ours"]["out"], results["peer"]["out"]))
        print(f"first outputs, ours vs peer: max |diff| = {d:.2e}")


if __name__ == "__main__":
    main()
