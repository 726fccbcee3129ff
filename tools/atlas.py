#!/usr/bin/env python3
"""Run the operator atlas in ours and in the reference runtime: outputs checked, latency compared.

    python tools/atlas.py [--atlas /work/atlas] [--peer-python PY] [--threads 1,2] [--iters 20]
                          [--budget-s 0.3] [--rounds 1] [--family F ...] [--no-time] [--markdown FILE] [NAME ...]

The atlas is what tools/atlas_export.py writes (NAME.pte, NAME.npz, NAME.json sidecars with family,
dtype, shape and lowering). For every regime, in this order:
  1. output check: the program runs once in each runtime (tools/zoo_compare.py's worker, its own
     process under a timeout); ours is checked against the reference runtime's outputs (max abs and
     relative error, relative to max|ref|): fp32 within 1e-4, fp16 within 1e-2, quantised recipes
     within 3 quantisation steps of the output (zoo_compare.compare's rules); a regime beyond its
     tolerance is a MISMATCH (a bug), listed at the end;
  2. latency at each thread count: tools/bench_zoo.py's run_one (tools/bench.py --worker, pinned with
     taskset to the same cores for both runtimes, the two alternating), median of the timed calls;
     the number of timed calls is max(--iters, --budget-s / the first call's time), at most 400, so
     that tiny operators get enough samples; with --rounds R, R passes over the whole atlas (which
     runtime goes first flips each pass) and each runtime's median of its R process medians.
Prints a table grouped by family (median ms ours / reference and ours/reference per thread count),
each family's geometric mean, the overall geometric mean, and the regimes above 1.0x at 1 thread and
above 1.25x at 2 threads. --markdown writes the same as Markdown (for docs/performance.md).
Ours is this checkout (its executorch_numpy_runtime, run by --ours-python); the reference is the
published wheel (upstream ExecuTorch + XNNPACK) in --peer-python.
"""
from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import platform
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import bench_zoo  # noqa: E402  (timing: run_one, zoo_inputs)
import zoo_compare  # noqa: E402  (output check: run_worker, compare)

FAMILIES = ["conv2d", "depthwise", "conv1d", "convT", "linear", "block", "fp16", "int8-static", "int8-dynamic", "4-bit",
            "attention", "pooling", "resize", "elementwise", "norm-layout", "portable"]
RTOL = {"fp16": 1e-2}  # by dtype; fp32 zoo_compare.FP32_RTOL, quantised recipes in quantisation steps


def load_regimes(atlas, names, families):
    regs = []
    for pte in sorted(glob.glob(os.path.join(atlas, "*.pte"))):
        name = os.path.splitext(os.path.basename(pte))[0]
        side = os.path.join(atlas, name + ".json")
        if names and name not in names:
            continue
        meta = {"family": "?", "dtype": "?", "recipe": "?", "shape": "", "note": ""}
        if os.path.exists(side):
            with open(side) as fh:
                meta.update(json.load(fh))
        if families and meta["family"] not in families:
            continue
        meta["name"] = name
        regs.append(meta)
    rank = {f: i for i, f in enumerate(FAMILIES)}
    regs.sort(key=lambda r: (rank.get(r["family"], len(rank)), r["family"], r["name"]))
    return regs


def lowering(reg):
    d, ops = reg.get("delegates"), reg.get("portable_ops") or []
    if d is None:
        return "?"
    return "xnn" if d and not ops else ("xnn+port" if d else "port")


def check(reg, atlas, args, tmp):
    """Run once in each runtime; ours against the reference's outputs."""
    pte, npz = os.path.join(atlas, reg["name"] + ".pte"), os.path.join(atlas, reg["name"] + ".npz")
    meta, calls = zoo_compare.load_ref(npz)
    # (ours imports this checkout, the reference never does: zoo_compare.run_worker sets PYTHONPATH)
    ours, ours_out = zoo_compare.run_worker(args.ours_python, pte, npz, args.timeout, tmp, True)
    ref, ref_out = zoo_compare.run_worker(args.peer_python, pte, npz, args.timeout, tmp, False)
    res = dict(ours=ours, ref=ref, run_s=ours.get("run_s") or ref.get("run_s"))
    if ours.get("ok") and ref.get("ok"):
        rtol = RTOL.get(reg["dtype"], zoo_compare.FP32_RTOL)
        res["vs_ref"] = zoo_compare.compare(ours_out, zoo_compare.as_calls(ref_out, len(calls)), meta, reg["recipe"], rtol)
    return res


def timing(reg, atlas, args, threads, run_s, tmp, flip=False, samples=None):
    """One timing pass of a regime via bench_zoo.run_one: appends each (threads, runtime)'s process
    median (ms) to samples[(threads, runtime)]; returns the errors."""
    import numpy as np

    model = os.path.join(atlas, reg["name"] + ".pte")
    inputs = os.path.join(tmp, reg["name"] + ".inputs.npz")
    if not os.path.exists(inputs):
        np.savez(inputs, **{f"in_{i}": x for i, x in enumerate(bench_zoo.zoo_inputs(os.path.splitext(model)[0] + ".npz"))})
    iters = args.iters
    if run_s:
        iters = int(min(400, max(args.iters, args.budget_s / max(run_s, 1e-6))))
    errs = []
    for t in threads:
        order = (("ours", args.ours_python), ("peer", args.peer_python))
        for be, py in (order if (t % 2) ^ flip else order[::-1]):
            r, err = bench_zoo.run_one(py, be, model, inputs, [], t, iters, args.warmup, tmp, args.warmup_ms)
            if err:
                errs.append(f"{be} {t} thr: {err}")
                break
            samples.setdefault((t, be), []).append(r["median"] * 1e3)
    return errs


def picked(samples, threads):
    """{threads: (ours ms, ref ms)}: the median of each runtime's process medians."""
    import numpy as np

    return {t: (float(np.median(samples[(t, "ours")])), float(np.median(samples[(t, "peer")])))
            for t in threads if samples.get((t, "ours")) and samples.get((t, "peer"))}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as fh:
            return next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.machine()


def commit():
    import subprocess

    r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def fmt_ms(x):
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def verdict(c):
    if not c["ours"].get("ok"):
        return "ours fails"
    if not c["ref"].get("ok"):
        return "ref fails"
    v = c["vs_ref"]
    return ("ok " if v["ok"] else "MISMATCH ") + f"{v['abs']:.1e}/{v['rel']:.1e}"


def report(rows, threads, args, skipped):
    """(console lines, markdown lines)."""
    head = ["regime", "dtype", "shape", "lowering", "check abs/rel"]
    for t in threads:
        head += [f"ours {t}t ms", f"ref {t}t ms", f"{t}t"]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    con = []
    fam_means = []
    for fam in dict.fromkeys(r["reg"]["family"] for r in rows):
        fr = [r for r in rows if r["reg"]["family"] == fam]
        means = []
        for t in threads:
            rs = [r["time"][t][0] / r["time"][t][1] for r in fr if t in r["time"]]
            means.append(f"{gmean(rs):.2f}x" if rs else "-")
        fam_means.append((fam, len(fr), means))
        md.append(f"| **{fam}** ({len(fr)}) | | | | | " + " | ".join(f"| | **{m}**" for m in means) + " |")
        con.append(f"\n== {fam} ({len(fr)} regimes; geometric mean " + ", ".join(
            f"{t}t {m}" for t, m in zip(threads, means)) + ")")
        for r in fr:
            reg, cells = r["reg"], []
            for t in threads:
                if t in r["time"]:
                    o, p = r["time"][t]
                    cells += [fmt_ms(o), fmt_ms(p), f"{o / p:.2f}x"]
                else:
                    cells += ["-", "-", "-"]
            ck = verdict(r["check"])
            md.append(f"| {reg['name']} | {reg['dtype']} | {reg['shape']} | {lowering(reg)} | {ck} | " + " | ".join(cells) + " |")
            con.append(f"{reg['name']:40s} {reg['dtype']:12s} {lowering(reg):8s} {ck:26s} " + "  ".join(
                f"{t}t {cells[3 * i]:>8s} {cells[3 * i + 1]:>8s} {cells[3 * i + 2]:>7s}" for i, t in enumerate(threads)))
    summ = []
    for t in threads:
        rs = [(r["time"][t][0] / r["time"][t][1], r["reg"]["name"]) for r in rows if t in r["time"]]
        if not rs:
            continue
        limit = 1.0 if t == 1 else 1.25
        over = sorted((x for x in rs if x[0] > limit), reverse=True)
        summ.append(f"{t} thread(s): geometric mean {gmean([x[0] for x in rs]):.2f}x over {len(rs)} regimes; "
                    f"{len(over)} above {limit:.2f}x: " + (", ".join(f"{n} {x:.2f}x" for x, n in over) or "none"))
    mism = [r for r in rows if r["check"].get("vs_ref") and not r["check"]["vs_ref"]["ok"]]
    summ.append(f"output check: {sum(1 for r in rows if r['check'].get('vs_ref'))} regimes compared, {len(mism)} mismatch(es)"
                + "".join(f"; {r['reg']['name']}: {r['check']['vs_ref']['note']}" for r in mism))
    for r in rows:
        for side in ("ours", "ref"):
            if not r["check"][side].get("ok"):
                summ.append(f"{side} cannot run {r['reg']['name']}: {r['check'][side].get('error', '?')[:200]}")
    summ += [f"not timed: {n}: {why}" for n, why in skipped]
    fam = "family geometric means (" + ", ".join(f"{t}t" for t in threads) + "): " + "; ".join(
        f"{f} ({n}) " + "/".join(m) for f, n, m in fam_means)
    con += ["", fam] + summ
    md += ["", f"- {fam}"] + [f"- {s}" for s in summ]
    return con, md


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help="only these regimes")
    p.add_argument("--atlas", default="/work/atlas", help="directory tools/atlas_export.py wrote")
    p.add_argument("--family", nargs="+", help="only these families")
    p.add_argument("--ours-python", default=sys.executable)
    p.add_argument("--peer-python", default=os.environ.get("ETNP_PEER_PYTHON", "/work/.ref-venv/bin/python"))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--iters", type=int, default=20, help="least number of timed calls per process")
    p.add_argument("--budget-s", type=float, default=0.3, help="timed seconds aimed at per process (more calls for fast ops)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--warmup-ms", type=float, default=100.0)
    p.add_argument("--timeout", type=float, default=300.0, help="per output-check process (seconds)")
    p.add_argument("--rounds", type=int, default=1,
                   help="timing passes over the whole atlas (fresh processes each); each runtime's median of its "
                        "per-pass medians (the shared machine's speed drifts for seconds to minutes)")
    p.add_argument("--no-time", action="store_true", help="output check only")
    p.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = p.parse_args()
    threads = [int(t) for t in args.threads.split(",") if t] if not args.no_time else []
    regs = load_regimes(args.atlas, set(args.names), set(args.family or ()))
    if not regs:
        p.error(f"no regimes in {args.atlas} (run tools/atlas_export.py in the export environment)")
    rows, skipped = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, reg in enumerate(regs):  # the output check, and the first timing pass
            c = check(reg, args.atlas, args, tmp)
            row = dict(reg=reg, check=c, samples={}, time={}, timed=c["ours"].get("ok") and c["ref"].get("ok"))
            if threads and row["timed"]:
                skipped += [(reg["name"], e) for e in timing(reg, args.atlas, args, threads, c["run_s"], tmp,
                                                              samples=row["samples"])]
                row["time"] = picked(row["samples"], threads)
            rows.append(row)
            tm = row["time"]
            print(f"[{i + 1}/{len(regs)}] {reg['name']}: {verdict(c)} " + " ".join(
                f"{t}t {tm[t][0]:.3f}/{tm[t][1]:.3f} ms {tm[t][0] / tm[t][1]:.2f}x" for t in threads if t in tm),
                file=sys.stderr, flush=True)
        for rnd in range(1, args.rounds if threads else 1):  # further passes over the whole atlas, minutes apart
            for row in rows:
                if row["timed"]:
                    skipped += [(row["reg"]["name"], e) for e in timing(
                        row["reg"], args.atlas, args, threads, row["check"]["run_s"], tmp, flip=rnd % 2 == 1,
                        samples=row["samples"])]
                    row["time"] = picked(row["samples"], threads)
            print(f"timing round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    con, md = report(rows, threads, args, skipped)
    print("\n".join(con))
    if args.markdown:
        stamp = (f"{datetime.date.today().isoformat()} on {cpu_name()} ({os.cpu_count()} CPUs), ours at {commit()}, "
                 f"{len(rows)} regimes, {args.rounds} timing round(s)")
        with open(args.markdown, "w") as fh:
            fh.write(f"Measured {stamp}.\n\n" + "\n".join(md) + "\n")
    mism = any(r["check"].get("vs_ref") and not r["check"]["vs_ref"]["ok"] for r in rows)
    return 1 if mism else 0


if __name__ == "__main__":
    sys.exit(main())
