#!/usr/bin/env python3
"""Deterministic mutation fuzzer for the Python-side readers (issue #30).

libFuzzer reaches the core's readers (.pte, .ptd); these inputs are read in Python first:

  bpte  bundled programs: ``bundled.parse``, ``Runtime.load_program`` (bytes and path) and
        ``bundled.verify`` on mutated tests/models/mlp_bundled.bpte / mlp_bundled_bad.bpte
  ptd   external weights: ``load_program(pte, data_files=[mutated .ptd])``, method load and run
        (tests/models/mlp_external{,_xnn}.ptd with their programs)
  npz   the CLI's inputs reader, through ``cli.main(["run"|"batch", MODEL, "--inputs", X, ...])``
        in-process, on byte-mutated and structure-mutated (.npy headers, keys, zip fields) archives
  wcache  packed-weight cache files (``load_program(pte, weight_cache=FILE)``, method load and run)
        written for small XNNPACK programs, byte-mutated, half of them "resealed" (section and
        header hashes recomputed) so that the mutation reaches the section parser's bounds and
        dimension checks instead of stopping at a hash mismatch

Every case's bytes depend only on (--seed, format, case index). A case ends well with success or
with a documented error: an ``ExecuTorchError`` subclass, a ValueError/TypeError with a message
(not a UnicodeError), or for the CLI exit status 0, or 1/2 with an ``error:`` line. Anything else
is a finding: another exception type escaping, a crash (signal), a hang, or memory exhaustion
under the --mem-mb address-space limit (MemoryError). A case hangs when it has used more than
--case-timeout seconds of CPU time, or none at all for --case-timeout seconds (a slow case on a
loaded machine still gets CPU time, so it is not one; without /proc: --case-timeout seconds of
wall time; see fuzzing/case_clock.py).

The cases run in a child process (RLIMIT_AS, a watchdog per case); after a crash or a hang the
parent saves the reproducer and starts a new child at the next case. Reproducers (and a .txt with
the exception and traceback) go to --out. The parts are in tools/fuzzing/: one module per format
(its seeds, mutator and code under test), the child, the parent and its case clock, and the
deliberate faults of --inject (fault_injection.py) that show the checks can fail.

    python tools/fuzz_python.py --seconds 60 --out build/fuzz_python [--seed 1] [--max-cases N]
    python tools/fuzz_python.py --replay FORMAT FILE      # run one saved input, raise what it raises

Exit status 0 when there is no finding (other than --known ones), 1 otherwise (2: usage).
"""
from __future__ import annotations

import argparse
import os
import sys

from fuzzing.byte_mutations import mutate_bytes  # noqa: F401  (the parts, importable from here as before)
from fuzzing.bundled_target import BundledTarget, mutate_bpte  # noqa: F401
from fuzzing.child import child_main, replay_main
from fuzzing.fault_injection import parse as parse_inject
from fuzzing.formats import EXT, FORMATS, TARGETS  # noqa: F401
from fuzzing.npz_target import CliRejected, NpzTarget, mutate_npz  # noqa: F401
from fuzzing.parent import parent_main
from fuzzing.ptd_target import PtdTarget  # noqa: F401
from fuzzing.target import ROOT, Target, acceptable  # noqa: F401
from fuzzing.weight_cache_target import WeightCacheTarget, wc_hash, wc_reseal  # noqa: F401


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60.0, help="stop after this long (0: no limit)")
    p.add_argument("--max-cases", type=int, default=1 << 62, help="cases per format")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=os.path.join(ROOT, "build", "fuzz_python"), help="reproducers go here")
    p.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of " + ", ".join(FORMATS))
    p.add_argument("--case-timeout", type=float, default=20.0,
                   help="seconds: a case that uses more CPU time, or no CPU time for this long, is a hang")
    p.add_argument("--mem-mb", type=int, default=4096, help="the child's address-space limit (RLIMIT_AS)")
    p.add_argument("--known", default="", metavar="REGEX",
                   help="findings whose line matches REGEX (a known, reported bug) do not fail the run")
    p.add_argument("--inject", default="", help=argparse.SUPPRESS)
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--replay", nargs=2, metavar=("FORMAT", "FILE"))
    p.add_argument("--case", type=int, default=1, help="with --replay: the case index (picks the program)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--report-fd", type=int, help=argparse.SUPPRESS)
    p.add_argument("--start", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.formats = [f for f in args.formats.split(",") if f]
    bad = [f for f in args.formats if f not in TARGETS]
    if bad or not args.formats:
        p.error(f"unknown format(s) {bad}; known: {', '.join(FORMATS)}")
    try:
        parse_inject(args.inject)
    except ValueError as e:
        p.error(str(e))
    if args.replay:
        return replay_main(args)
    if args.child:
        args.start = [int(s) for s in args.start.split(",")]
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
