#!/usr/bin/env python3
"""Run every program of the real-model zoo in OUR runtime and in the REFERENCE runtime, and compare.

Needs only numpy (no torch); works with any Python:

    python tools/zoo_compare.py [--zoo /work/zoo] [--ours-python PY] [--ref-python PY]
                                [--timeout 300] [--report FILE] [NAME ...]

The zoo is what tools/zoo_export.py writes: NAME.pte, NAME.npz (seeded inputs, torch-eager outputs
and a JSON ``meta`` record) and, for external-constant programs, NAME*.ptd. Each program runs once
per runtime in a worker subprocess (this same file with ``--worker``) under a timeout, so a crash
or a hang is a table row, not a failure of the tool. The worker loads the program (passing
``data_files=[...]`` to load_program when the program has .ptd files), loads ``forward`` and makes
every recorded call in order on that one method (successive KV-cache steps; one call per shape for
dynamic-shape programs), then hands back its outputs. Inputs of programs with a channels-last
dim order (meta in_dim_orders) are given to ours by logical value and to the reference in its
convention (the data in dim order under the logical shape: it reads the raw buffer).

  --ours-python  interpreter whose ``executorch_numpy_runtime`` is ours   (default: this interpreter, importing this checkout)
  --ref-python   interpreter with the reference wheel (upstream ExecuTorch) (default /work/envs/ref-venv/bin/python)

Workers run from a temporary directory so no checkout shadows the installed package.

Table columns: name, recipe, ours / ref status (``ok`` or a short error; full messages follow the
table), the largest absolute and relative error of ours against the reference runtime and against
torch eager, the reference's own relative error against torch eager (ref/tch: what the export
recipe itself costs), the basis of the verdict and the verdict. Errors are taken over all outputs of all calls; the relative error is
max|ours - ref| / max|ref| per output. Non-float outputs must match exactly.

Pass criterion (against the reference runtime; against torch eager when the reference failed, the
basis column then says ``torch``):
  fp32 recipes       relative error <= 1e-4
  quantised recipes  (int8-*, 8da4w, 8da8w) absolute error <= 3 quantisation steps of the output:
                     3 * the output's dequantize scale when the exporter recorded it (meta out_steps),
                     otherwise 3 * 2 * max|ref| / 255 (three steps of a symmetric int8 grid spanning
                     the output's range; outputs of dynamically quantised linears are float)
Totals: programs the reference runs, programs ours runs, and programs ours matches.
Exit status: 0 when ours passes every program the reference (or torch) gives a basis for, else 1.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

OURS = sys.executable
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # (this checkout: what "ours" imports)
REF = "/work/envs/ref-venv/bin/python"
FP32_RTOL = 1e-4
QUANT_STEPS = 3


# ----------------------------------------------------------------- worker side
def load_ref(npz_path):
    """(meta dict, [(inputs, torch outputs) per call]) from a zoo .npz."""
    with np.load(npz_path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"])) if "meta" in z.files else {}
        files = set(z.files)
        calls = []
        n = meta.get("calls", 1)
        for k in range(n):
            pre = f"forward:call{k}:" if f"forward:call{k}:in:0" in files or f"forward:call{k}:out:0" in files else "forward:"

            def seq(kind, pre=pre):
                out, i = [], 0
                while f"{pre}{kind}:{i}" in files:
                    out.append(z[f"{pre}{kind}:{i}"])
                    i += 1
                return out
            calls.append((seq("in"), seq("out")))
    return meta, calls


def in_dim_order(x, order, raw_bytes):
    """An input whose program dim order is not contiguous (channels-last), as each runtime takes it:
    ours by its logical values (any numpy layout); the reference reads the raw buffer as if it were
    in the program's dim order, so it gets the data in dim order under the logical shape."""
    if not raw_bytes or order is None or list(order) == list(range(np.ndim(x))):
        return x
    return np.ascontiguousarray(np.transpose(x, order)).reshape(np.shape(x))


def worker(pte, npz, out_path):
    """Run one program in this interpreter's executorch_numpy_runtime; write outputs and a status."""
    status = {"ok": False, "stage": "import"}
    outs = {}
    try:
        import executorch_numpy_runtime as en
        meta, calls = load_ref(npz)
        data = [os.path.join(os.path.dirname(pte), f) for f in meta.get("data_files", [])]
        status["stage"] = "load_program"
        t0 = time.perf_counter()
        rt = en.Runtime.get()
        prog = rt.load_program(pte, data_files=data) if data else rt.load_program(pte)
        status["stage"] = "load_method"
        method = prog.load_method("forward")
        status["load_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        orders = meta.get("in_dim_orders") or []
        for k, (ins, _) in enumerate(calls):
            status["stage"] = f"call {k}"
            meta_cls = getattr(en, "ValueMeta", None)  # the published wheel has none (and reads raw buffers)
            raw = "dim_order" not in getattr(meta_cls, "__dataclass_fields__", {})
            res = method([in_dim_order(x, orders[i] if i < len(orders) else None, raw) for i, x in enumerate(ins)])
            for i, r in enumerate(res):
                outs[f"call{k}:out:{i}"] = np.asarray(r)
        status["run_s"] = time.perf_counter() - t0
        status["ok"] = True
    except BaseException as e:  # noqa: BLE001 - every failure is reported, none escapes
        msg = str(e).strip().replace("\n", " | ")
        status["error"] = f"{type(e).__name__}: {msg}"
    np.savez(out_path, **outs)
    with open(out_path + ".json", "w") as fh:
        json.dump(status, fh)


# ----------------------------------------------------------------- driver side
def run_worker(python, pte, npz, timeout, tmp, ours):
    """Run the worker; return (status dict, {key: array}). Ours imports this checkout (PYTHONPATH
    set to it, as the worker runs in a temporary folder); the reference never does (unset)."""
    out = os.path.join(tmp, f"out_{abs(hash((python, pte)))}.npz")
    for f in (out, out + ".json"):
        if os.path.exists(f):
            os.remove(f)
    cmd = [python, os.path.abspath(__file__), "--worker", os.path.abspath(pte), os.path.abspath(npz), out]
    try:
        env = dict(os.environ)
        if ours:
            env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        else:
            env.pop("PYTHONPATH", None)
        p = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout after {timeout} s"}, {}
    except OSError as e:
        return {"ok": False, "error": f"cannot start {python}: {e}"}, {}
    if not os.path.exists(out + ".json"):
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or [""]
        why = f"killed by signal {-p.returncode}" if p.returncode < 0 else f"exit status {p.returncode}"
        return {"ok": False, "error": f"crash ({why}) {tail[0][:200]}"}, {}
    with open(out + ".json") as fh:
        status = json.load(fh)
    with np.load(out, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    if status.get("error") and status.get("stage"):
        status["error"] = f"[{status['stage']}] {status['error']}"
    return status, arrays


def quantised(recipe):
    return recipe.startswith("int8") or "8da4w" in recipe or "8da8w" in recipe


def errors(got, want):
    """(max abs error, max relative error, problem or None) of two arrays."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf"), float("inf"), f"shape {got.shape} != {want.shape}"
    if got.size == 0:
        return 0.0, 0.0, None
    if want.dtype.kind not in "fc":
        bad = int(np.count_nonzero(got != want))
        return float(bad), float(bad), (f"{bad} of {got.size} {want.dtype} values differ" if bad else None)
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.isfinite(g).all() and np.isfinite(w).all():
        return float("inf"), float("inf"), "non-finite outputs"
    d = np.abs(g - w)
    d[np.isnan(d) & np.isnan(g) & np.isnan(w)] = 0.0
    mx = float(np.max(np.abs(w))) or 1.0
    return float(np.max(d)), float(np.max(d)) / mx, None


def compare(outs, calls, meta, recipe, rtol=FP32_RTOL):
    """Compare worker outputs with the per-call references `calls` [(ins, outs)] -> dict."""
    worst_abs, worst_rel, ok, notes = 0.0, 0.0, True, []
    steps = meta.get("out_steps") or []
    for k, (_, want_outs) in enumerate(calls):
        n_got = sum(1 for key in outs if key.startswith(f"call{k}:out:"))
        if n_got != len(want_outs):
            return dict(abs=float("inf"), rel=float("inf"), ok=False, note=f"call {k}: {n_got} outputs, want {len(want_outs)}")
        for i, want in enumerate(want_outs):
            a, r, prob = errors(outs[f"call{k}:out:{i}"], want)
            worst_abs, worst_rel = max(worst_abs, a), max(worst_rel, r)
            if prob:
                ok = False
                notes.append(f"call {k} out {i}: {prob}")
                continue
            if want.dtype.kind != "f":
                continue
            if quantised(recipe):
                step = steps[i] if i < len(steps) and steps[i] else 2.0 * float(np.max(np.abs(want))) / 255.0
                if a > QUANT_STEPS * step:
                    ok = False
                    notes.append(f"call {k} out {i}: abs {a:.3g} > {QUANT_STEPS} steps of {step:.3g}")
            elif r > rtol:
                ok = False
                notes.append(f"call {k} out {i}: rel {r:.3g} > {rtol:g}")
    return dict(abs=worst_abs, rel=worst_rel, ok=ok, note="; ".join(notes[:3]))


def as_calls(outs, n):
    """Worker outputs as the [(ins, outs)] layout of load_ref (to serve as a reference)."""
    res = []
    for k in range(n):
        i, lst = 0, []
        while f"call{k}:out:{i}" in outs:
            lst.append(outs[f"call{k}:out:{i}"])
            i += 1
        res.append(([], lst))
    return res


def short(status, width=34):
    if status.get("ok"):
        return "ok"
    msg = status.get("error", "error")
    return msg if len(msg) <= width else msg[:width - 1] + "~"


def fmt(x):
    return "-" if x is None else ("inf" if x == float("inf") else f"{x:.1e}")


def evaluate(name, zoo, args, tmp):
    pte, npz = os.path.join(zoo, name + ".pte"), os.path.join(zoo, name + ".npz")
    meta, calls = load_ref(npz)
    recipe = meta.get("recipe", "?")
    ours, ours_out = run_worker(args.ours_python, pte, npz, args.timeout, tmp, True)
    ref, ref_out = run_worker(args.ref_python, pte, npz, args.timeout, tmp, False)
    row = dict(name=name, recipe=recipe, calls=len(calls), ours=ours, ref=ref, vs_ref=None, vs_torch=None,
               basis=None, verdict="FAIL")
    if ref.get("ok"):
        row["ref_vs_torch"] = compare(ref_out, calls, meta, recipe)
    if ours.get("ok"):
        row["vs_torch"] = compare(ours_out, calls, meta, recipe)
        if ref.get("ok"):
            row["vs_ref"] = compare(ours_out, as_calls(ref_out, len(calls)), meta, recipe)
            row["basis"], verdict = "ref", row["vs_ref"]
        else:
            row["basis"], verdict = "torch", row["vs_torch"]
        row["verdict"] = "pass" if verdict["ok"] else "FAIL"
    elif not ref.get("ok"):
        row["verdict"] = "both fail"
    return row


def table(rows):
    head = f"{'name':30s} {'recipe':18s} {'ours':34s} {'ref':34s} {'abs/ref':>8s} {'rel/ref':>8s} " \
           f"{'abs/tch':>8s} {'rel/tch':>8s} {'ref/tch':>8s} {'basis':5s} verdict"
    lines = [head, "-" * len(head)]
    for r in rows:
        vr, vt, rt = r["vs_ref"] or {}, r["vs_torch"] or {}, r.get("ref_vs_torch") or {}
        lines.append(f"{r['name']:30s} {r['recipe']:18s} {short(r['ours']):34s} {short(r['ref']):34s} "
                     f"{fmt(vr.get('abs')):>8s} {fmt(vr.get('rel')):>8s} {fmt(vt.get('abs')):>8s} "
                     f"{fmt(vt.get('rel')):>8s} {fmt(rt.get('rel')):>8s} {r['basis'] or '-':5s} {r['verdict']}")
    n = len(rows)
    ref_ok = sum(r["ref"].get("ok", False) for r in rows)
    ours_ok = sum(r["ours"].get("ok", False) for r in rows)
    match = sum(r["verdict"] == "pass" for r in rows)
    match_ref = sum(r["verdict"] == "pass" and r["basis"] == "ref" for r in rows)
    lines += ["", f"programs: {n}   reference runs: {ref_ok}   ours runs: {ours_ok}   ours matches: {match} "
                  f"({match_ref} against the reference, {match - match_ref} against torch where the reference failed)"]
    details = []
    for r in rows:
        for who in ("ours", "ref"):
            if not r[who].get("ok"):
                details.append(f"  {r['name']} [{who}]: {r[who].get('error')}")
        for key, label in (("vs_ref", "ours vs ref"), ("vs_torch", "ours vs torch"), ("ref_vs_torch", "ref vs torch")):
            v = r.get(key)
            if v and v.get("note") and (key != "vs_torch" or r["basis"] == "torch" or r["verdict"] != "pass"):
                details.append(f"  {r['name']} [{label}]: {v['note']}")
    if details:
        lines += ["", "details:"] + details
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="programs to run (default: every NAME.pte with a NAME.npz)")
    ap.add_argument("--zoo", default="/work/zoo")
    ap.add_argument("--ours-python", default=OURS)
    ap.add_argument("--ref-python", default=REF)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per program per runtime")
    ap.add_argument("--report", help="also write the table to this file")
    ap.add_argument("--worker", nargs=3, metavar=("PTE", "NPZ", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    names = args.names or sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(args.zoo, "*.pte"))
                                 if os.path.exists(p[:-4] + ".npz"))
    if not names:
        ap.error(f"no programs in {args.zoo}")
    tmp = tempfile.mkdtemp(prefix="zoo_compare_")
    rows = []
    try:
        for name in names:
            t0 = time.time()
            try:
                row = evaluate(name, args.zoo, args, tmp)
            except Exception as e:  # a broken .npz is a row too
                row = dict(name=name, recipe="?", calls=0, ours={"error": f"{type(e).__name__}: {e}"},
                           ref={"error": "not run"}, vs_ref=None, vs_torch=None, basis=None, verdict="FAIL")
            rows.append(row)
            print(f"{name}: ours {short(row['ours'], 60)}, ref {short(row['ref'], 60)}, {row['verdict']} "
                  f"({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = table(rows)
    print(text)
    if args.report:
        with open(args.report, "w") as fh:
            fh.write(text + "\n")
    return 0 if all(r["verdict"] in ("pass", "both fail") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
