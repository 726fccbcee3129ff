#!/usr/bin/env python3
"""Export the operator atlas: single-operator (or tiny few-operator) programs over shape regimes.

Runs ONLY in the export environment (torch + executorch 1.3.1 + torchao + torchvision):

    nice python tools/atlas_export.py [--out /work/atlas] [--only NAME ...] [--family F ...]
                                      [--skip-existing] [--list]

Every regime is one small program, exported by tools/zoo_export.py's pipeline (export_one: the same
XNNPACK partitioner, PT2E static / dynamic int8, torchao 8da4w, seeded weights and inputs, the
``forward:in:i`` / ``forward:out:i`` .npz convention), so the atlas measures the operators exactly
as the zoo's programs contain them. The regimes (tools/atlas_regimes.py) cover every XNNPACK node
type the 1.3.1 partitioner emits for the zoo and the portable operators left between delegates,
over shapes taken from real models and from the corners (one input channel, depth multipliers,
transposed convolutions, long 1-D kernels, dilation, strides larger than the kernel, tiny and huge
spatial sizes, batch > 1, M = 1 GEMV, fp32 / fp16 / static int8 / dynamic int8 / 4-bit, attention,
pooling, resize, pad, elementwise and broadcast patterns), and every hole found in a model.

For every regime NAME the output directory (never the repository) gets NAME.pte, NAME.npz and
NAME.json: family, dtype, recipe, shape, note, and what the lowering left outside the delegates
(``portable_ops``: edge operators of the program's own graph; ``delegates``: the number of
XNNPACK delegate calls). ``manifest.json`` collects the sidecars of the whole directory.
Failures are listed at the end (exit status 1); a failed regime is a finding too (what the 1.3.1
flow cannot export).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
_flatc = os.path.join(os.path.dirname(sys.executable), "flatc")  # the export venv's own flatc, unless one is set
if "FLATC_EXECUTABLE" not in os.environ and os.path.exists(_flatc):
    os.environ["FLATC_EXECUTABLE"] = _flatc


def lowering_summary(edge):
    """(delegate calls, sorted edge ops outside the delegates) of a lowered EdgeProgramManager."""
    gm = edge.exported_program().graph_module
    delegates, ops = 0, set()
    for nd in gm.graph.nodes:
        if nd.op != "call_function":
            continue
        t = str(nd.target)
        if "executorch_call_delegate" in t:
            delegates += 1
        elif not t.startswith("<") and "getitem" not in t:  # not memory.alloc / operator.getitem
            ops.add(t.replace("aten.", "").split(" ")[-1])
    return delegates, sorted(ops)


def export_regime(name, entry, outdir):
    """zoo_export.export_one, capturing the lowered program's delegate summary."""
    import executorch.exir as exir
    import zoo_export  # the zoo's export pipeline, reused as is (needs torch: imported after --help)

    seen = {}
    orig = exir.to_edge_transform_and_lower

    def capture(*a, **kw):
        edge = orig(*a, **kw)
        seen["edge"] = edge
        return edge

    exir.to_edge_transform_and_lower = capture  # export_one imports it from executorch.exir at call time
    try:
        size = zoo_export.export_one(name, entry, outdir)
    finally:
        exir.to_edge_transform_and_lower = orig
    delegates, ops = lowering_summary(seen["edge"]) if "edge" in seen else (None, None)
    side = {k: entry[k] for k in ("family", "dtype", "recipe", "shape", "note")}
    side.update(name=name, delegates=delegates, portable_ops=ops, pte_bytes=size)
    with open(os.path.join(outdir, name + ".json"), "w") as fh:
        json.dump(side, fh, indent=1)
    return size, delegates, ops


def write_manifest(outdir):
    regs = {}
    for f in sorted(glob.glob(os.path.join(outdir, "*.json"))):
        if os.path.basename(f) == "manifest.json":
            continue
        with open(f) as fh:
            d = json.load(fh)
        regs[d["name"]] = d
    with open(os.path.join(outdir, "manifest.json"), "w") as fh:
        json.dump(regs, fh, indent=1)
    return len(regs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/work/atlas", help="output directory (outside the repository)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="export only these regimes")
    ap.add_argument("--family", nargs="+", help="export only these families")
    ap.add_argument("--skip-existing", action="store_true", help="skip regimes whose .pte, .npz and .json exist")
    ap.add_argument("--list", action="store_true", help="list the regimes (name, family, recipe, shape)")
    args = ap.parse_args(argv)
    from atlas_regimes import REGIMES  # needs torch
    import zoo_export
    if args.list:
        for n, e in REGIMES.items():
            print(f"{n:40s} {e['family']:12s} {e['recipe']:16s} {e['shape']}")
        print(f"{len(REGIMES)} regimes")
        return 0
    unknown = set(args.only or ()) - set(REGIMES)
    if unknown:
        ap.error(f"unknown regimes: {sorted(unknown)}")
    os.makedirs(args.out, exist_ok=True)
    failed = {}
    for name, entry in REGIMES.items():
        if args.only and name not in args.only:
            continue
        if args.family and entry["family"] not in args.family:
            continue
        if args.skip_existing and all(os.path.exists(os.path.join(args.out, name + x)) for x in (".pte", ".npz", ".json")):
            continue
        t0 = time.time()
        try:
            size, dele, ops = export_regime(name, entry, args.out)
            print(f"{name}: ok, {size / 1e3:.0f} kB, {dele} delegate(s), outside: {','.join(ops) or '-'}, "
                  f"{time.time() - t0:.0f} s", flush=True)
        except Exception as e:  # one failure does not stop the rest
            zoo_export.note_failure(failed, name, e, t0)
    n = write_manifest(args.out)
    print(f"manifest: {n} regimes in {args.out}")
    return zoo_export.report_failures(failed)


if __name__ == "__main__":
    sys.exit(main())
