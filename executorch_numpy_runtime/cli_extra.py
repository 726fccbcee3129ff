"""CLI pieces of issue #19 (kept apart from cli.py): ``--version`` and ``etnp verify MODEL.bpte``."""
from __future__ import annotations

import argparse
import sys
from typing import Callable, Dict


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
    s.add_argument("--rtol", type=float, default=1e-5)
    s.add_argument("--atol", type=float, default=1e-6)
    return {"verify": cmd_verify}


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: python -m executorch_numpy_runtime")
