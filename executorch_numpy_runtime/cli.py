"""Command line: ``python -m executorch_numpy_runtime`` / ``etnp``.

    etnp example                         run the bundled example model and check it
    etnp info MODEL.pte                  methods, inputs/outputs, operators, delegates
    etnp run MODEL.pte --inputs in.npz --out out.npz [--method forward]
    etnp batch MODEL.pte --inputs DIR_OR_NPZ --out DIR [--method forward]
    etnp bench MODEL.pte [--iters 50] [--threads N] [--profile [--top N] [--trace T.json]]
               [--etdump OUT.etdp [--debug-buffer OUT.bin]]
    etnp verify MODEL.bpte [--rtol R] [--atol A]   run a bundled program's test cases
    etnp generate MODEL.pte --tokenizer tokenizer.json --prompt "..."   (cli_generate.py)
    etnp --version
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import time
from typing import List

import numpy as np

from . import cli_extra, runtime_info
from .cli_extra import MAX_COUNT, THREADS, bounded_int
from .cli_generate import add_generate_parser, cmd_generate
from .errors import ExecuTorchError
from .npz_inputs import KEY_RULE, InputsError, read_inputs
from .progress import Progress
from .runtime import Runtime

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples")


class UsageError(ValueError):
    """A bad command-line argument (one line, exit status 2)."""


def _save_npz(path: str, outs) -> None:
    """Writes exactly PATH (np.savez would append .npz to a name without it)."""
    if os.path.isdir(path):
        raise UsageError(f"--out {path} is a directory; give a file name such as out.npz")
    arrays = {f"output_{i}": np.asarray(o) for i, o in enumerate(outs)}
    try:
        if os.path.exists(path) and not os.path.isfile(path):
            # /dev/null, /dev/stdout, a FIFO: the zip is made in memory (zipfile seeks back on a
            # file that tells positions, and /dev/null's are all 0: a corrupt zip, a struct.error)
            buf = io.BytesIO()
            np.savez(buf, **arrays)
            with open(path, "wb") as fh:
                fh.write(buf.getbuffer())
        else:
            with open(path, "wb") as fh:
                np.savez(fh, **arrays)
    except OSError as e:
        raise UsageError(f"cannot write --out {path}: {e.strerror or e}") from None


def cmd_example(args) -> int:
    path = os.path.join(EXAMPLES, "mlp.pte")
    if args.save:  # a copy to try the README's example on
        import shutil
        shutil.copyfile(path, args.save)
        print(f"wrote {args.save} (the example program: an XNNPACK-lowered MLP, forward(float32[4, 16]))")
    method = Runtime.get().load_program(path).load_method("forward")
    with np.load(os.path.join(EXAMPLES, "mlp.npz")) as z:
        x, want = z["forward:in:0"], z["forward:out:0"]
    out = method([x])[0]
    err = float(np.abs(out - want).max())
    print(f"example: {path}\n  {method.metadata}\n  output[0] = {np.array2string(out[0], precision=4)}")
    print(f"  max |ours - torch eager| = {err:.2e}  ->  {'OK' if err < 1e-4 else 'MISMATCH'}")
    return 0 if err < 1e-4 else 1


def cmd_info(args) -> int:
    prog = Runtime.get().load_program(args.model)
    print(f"{args.model}: {len(prog.method_names)} method(s)")
    for name in prog.method_names:
        print(f"  method {name}")
        ops, dels = prog.operators(name), prog.delegates(name)
        try:
            method = prog.load_method(name)
            meta, names = method.metadata, method.input_names
            for i, v in enumerate(meta.inputs):  # names other than input_<i> are .npz keys too (etnp run)
                print(f"    input  {i}: {v}" + (f"  name {names[i]!r}" if names[i] != f"input_{i}" else ""))
            for i, v in enumerate(meta.outputs):
                print(f"    output {i}: {v}")
        except ExecuTorchError as e:
            print(f"    (cannot load: {e})")
        known = set(runtime_info()["operators"])
        for op in ops:
            print(f"    op       {op}{'' if op in known else '   <- not in this runtime'}")
        for d in dels:
            print(f"    delegate {d}")
    return 0


def cmd_run(args) -> int:
    if os.path.isdir(args.out):
        raise UsageError(f"--out {args.out} is a directory; give a file name such as out.npz")
    method = Runtime.get().load_program(args.model).load_method(args.method)
    ins = read_inputs(args.inputs, args.method, method.metadata.inputs, names=method.input_names)
    outs = method(ins)
    _save_npz(args.out, outs)
    for i, o in enumerate(outs):
        o = np.asarray(o)
        print(f"output {i}: {o.dtype}{list(o.shape)}")
    return 0


def cmd_batch(args) -> int:
    if not os.path.exists(args.inputs):
        raise UsageError(f"--inputs {args.inputs}: no such file or directory")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out {args.out} exists and is not a directory")
    method = Runtime.get().load_program(args.model).load_method(args.method)
    metas, names = method.metadata.inputs, method.input_names
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create --out {args.out}: {e.strerror or e}") from None
    work = []  # (name, path or None, stacked arrays or None, index)
    if os.path.isdir(args.inputs):
        for f in sorted(os.listdir(args.inputs)):
            if f.endswith(".npz"):
                work.append((os.path.splitext(f)[0], os.path.join(args.inputs, f), None, None))
    else:  # one .npz whose arrays are stacked items: key i -> array [items, ...]
        stacked = read_inputs(args.inputs, args.method, metas, stacked=True, names=names)
        for k in range(len(stacked[0]) if stacked else 0):
            work.append((f"item_{k:05d}", None, stacked, k))
    failures = 0
    bar = Progress(len(work))
    for done, (name, path, stacked, k) in enumerate(work, 1):
        try:
            if stacked is None:
                ins = read_inputs(path, args.method, metas, names=names)
            else:
                ins = [np.ascontiguousarray(a[k]) for a in stacked]
            outs = method(ins)
            _save_npz(os.path.join(args.out, name + ".npz"), outs)
        except Exception as e:  # each item's failure is reported; the batch goes on
            failures += 1
            bar.note(f"{name}: FAILED: {e}")
        bar.update(done)
    print(f"{len(work) - failures} ok, {failures} failed -> {args.out}")
    if failures:  # a run error, as for run and verify: exit status 1 (2 is for usage errors)
        sys.stdout.flush()
        print(f"error: {failures} of {len(work)} items failed", file=sys.stderr)
        return 1
    return 0


def cmd_bench(args) -> int:
    if args.debug_buffer and not args.etdump:
        raise UsageError("--debug-buffer needs --etdump")
    rt = Runtime(num_threads=args.threads) if args.threads else Runtime.get()
    t0 = time.perf_counter()
    prog = rt.load_program(args.model)
    method = prog.load_method(args.method)
    load_ms = (time.perf_counter() - t0) * 1e3
    rng = np.random.default_rng(0)
    ins = []
    for v in method.metadata.inputs:
        if v.kind != "tensor":
            raise ExecuTorchError("bench supports tensor inputs only")
        dt = np.dtype(v.dtype) if v.dtype != "bfloat16" else np.dtype(np.uint16)
        ins.append(rng.standard_normal(v.shape).astype(dt) if dt.kind == "f" else np.zeros(v.shape, dt))
    for _ in range(args.warmup):
        method(ins)
    ts = []
    for _ in range(args.iters):
        t = time.perf_counter()
        method(ins)
        ts.append(time.perf_counter() - t)
    ts.sort()
    med = ts[len(ts) // 2]
    print(f"{args.model} [{args.method}] threads={rt.num_threads}: load {load_ms:.2f} ms, "
          f"min {ts[0] * 1e3:.3f} ms, median {med * 1e3:.3f} ms, {1 / med:.1f} it/s")
    if args.profile or args.etdump:  # after the timed calls: profiling does not touch the figures above
        prof = method.profile(ins, repeat=min(args.iters, 10), intermediate_outputs=bool(args.debug_buffer))
        if args.profile:
            print(prof.table(args.top))
        if args.trace:
            prof.to_chrome_trace(args.trace)
            print(f"Chrome trace: {args.trace}")
        if args.etdump:
            prof.to_etdump(args.etdump, args.debug_buffer)
            print(f"ETDump: {args.etdump} ({len(prof.calls)} runs)" +
                  (f", debug buffer: {args.debug_buffer}" if args.debug_buffer else ""))
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not the usage block
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv=None) -> int:
    p = _Parser(prog="etnp", description="Run ExecuTorch .pte programs with numpy.")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("example", help="run the bundled example model").add_argument(
        "--save", metavar="PATH", help="also copy the example program to PATH (e.g. model.pte)")
    s = sub.add_parser("info", help="describe a program")
    s.add_argument("model")
    for name, inputs in (("run", "a .npz file"),
                         ("batch", "a directory of .npz files (one item each), or one .npz whose arrays "
                                   "stack the items along a first axis")):
        s = sub.add_parser(name, help=f"{name} a method on inputs from .npz")
        s.add_argument("model")
        s.add_argument("--inputs", required=True, help=f"{inputs}: {KEY_RULE} (etnp info shows the names)")
        s.add_argument("--out", required=True, help="a .npz file (keys output_i)" if name == "run" else
                       "a directory: one .npz (keys output_i) per item")
        s.add_argument("--method", default="forward")
    s = sub.add_parser("bench", help="time a method on random inputs")
    s.add_argument("model")
    s.add_argument("--method", default="forward")
    s.add_argument("--iters", type=bounded_int(1, MAX_COUNT), default=50)
    s.add_argument("--warmup", type=bounded_int(0, MAX_COUNT), default=5)
    s.add_argument("--threads", type=THREADS, default=None,
                   help=f"1 to {cli_extra.MAX_THREADS} (default: the machine's physical cores)")
    s.add_argument("--profile", action="store_true", help="then profile the method and print its top operators")
    s.add_argument("--top", type=bounded_int(1, 1_000_000), default=15, help="operators shown by --profile")
    s.add_argument("--trace", help="with --profile: write a Chrome trace (JSON) here")
    s.add_argument("--etdump", metavar="OUT.etdp", help="write the profiled calls as an ETDump "
                   "(executorch.devtools.Inspector reads it, with an ETRecord)")
    s.add_argument("--debug-buffer", metavar="OUT.bin", help="with --etdump: also record every instruction's "
                   "output and the method outputs (intermediate outputs) into this debug buffer file")
    extra = cli_extra.add_commands(p, sub)
    add_generate_parser(sub)
    args = p.parse_args(argv)
    fn = {"example": cmd_example, "info": cmd_info, "run": cmd_run, "batch": cmd_batch, "bench": cmd_bench,
          "generate": cmd_generate, **extra}[args.cmd]
    try:
        return fn(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (ExecuTorchError, InputsError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
