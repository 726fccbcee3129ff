"""CLI pieces kept apart from cli.py: ``--version``, ``etnp verify MODEL.bpte`` (issue #19), and the
argparse ``type=`` functions every subcommand's numeric arguments share (issue #30): a value out of
range is argparse's one-line ``error:`` (exit status 2), before the command runs."""
from __future__ import annotations

import argparse
import math
import sys
from typing import Callable, Dict, Optional

from .runtime import MAX_THREADS  # the core's thread pool size limit
MAX_COUNT = 10 ** 9  # iterations, tokens, top-k: beyond any real use, and far from overflowing anything


def bounded_int(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an integer from LO to HI inclusive."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer from {lo} to {hi}, not {text}")
        return value
    return parse


def finite_float(lo: float, hi: Optional[float] = None, *, lo_open: bool = False, name: str = "") -> Callable[[str], float]:
    """An argparse type: a finite number >= LO (> LO with ``lo_open``), and <= HI when given.
    ``name`` starts the message (e.g. the library's own parameter name)."""
    if hi is None:
        want = f"a finite number {'>' if lo_open else '>='} {lo:g}"
    else:
        want = f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}]"
    prefix = f"{name} " if name else ""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
        if not (math.isfinite(value) and (value > lo if lo_open else value >= lo) and (hi is None or value <= hi)):
            raise argparse.ArgumentTypeError(f"{prefix}must be {want}, not {text!r}")
        return value
    return parse


THREADS = bounded_int(1, MAX_THREADS)
TOLERANCE = finite_float(0.0)


def cmd_verify(args) -> int:
    from .bundled import verify
    from .runtime import Runtime

    results = verify(Runtime.get(), args.model, rtol=args.rtol, atol=args.atol)
    if not results:
        print(f"{args.model}: no test cases")
        return 0
    failed = 0
    for r in results:
        failed += not r.passed
        print(f"{r.method}[{r.index}]: {'PASS' if r.passed else 'FAIL'}  max |error| = {r.max_abs_error:.3g}"
              + (f"  ({r.message})" if r.message else ""))
    print(f"{len(results) - failed} passed, {failed} failed (rtol={args.rtol:g}, atol={args.atol:g})")
    return 0 if failed == 0 else 1


def add_commands(parser: argparse.ArgumentParser, sub) -> Dict[str, Callable]:
    from . import __et_version__, __version__

    parser.add_argument("--version", action="version",
                        version=f"etnp {__version__} (executorch-numpy-runtime; ExecuTorch {__et_version__} programs)")
    s = sub.add_parser("verify", help="run the test cases of a bundled program (.bpte)")
    s.add_argument("model")
    s.add_argument("--rtol", type=TOLERANCE, default=1e-5, help="relative tolerance (finite, >= 0; default 1e-5)")
    s.add_argument("--atol", type=TOLERANCE, default=1e-6, help="absolute tolerance (finite, >= 0; default 1e-6)")
    return {"verify": cmd_verify}


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: python -m executorch_numpy_runtime")
