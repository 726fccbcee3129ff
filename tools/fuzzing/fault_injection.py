"""Deliberate bugs, to show that the fuzzer (and tests/test_fuzz_formats.py) can fail.

``--inject`` takes a comma-separated list of
  bpte-indexerror   bundled.parse raises IndexError on inputs whose length is a multiple of 5
  npz-keyerror      npz_inputs._keys raises KeyError on archives with duplicate or surplus members
  bpte-crash@N      bundled.parse kills its process with SIGSEGV in case N
  bpte-hang@N       bundled.parse sleeps for an hour in case N (a hang that uses no CPU time)
  bpte-spin@N       bundled.parse loops forever in case N (a hang that uses CPU time)
(@N: one case index; name a kind once per case: bpte-crash@0,bpte-crash@5). The crash and hang
faults hit exactly the cases named, whatever their bytes; the child says which case it runs
through ``Injection.case``.
"""
from __future__ import annotations

import os
import signal
import time
from typing import Dict, Set

DATA_RULES = ("bpte-indexerror", "npz-keyerror")
PER_CASE = ("bpte-crash", "bpte-hang", "bpte-spin")


def parse(spec: str) -> Dict[str, Set[int]]:
    """KIND -> the cases it hits (empty for the data rules); ValueError for a malformed spec."""
    out: Dict[str, Set[int]] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        kind, at, case = item.partition("@")
        if kind in DATA_RULES and not at:
            out.setdefault(kind, set())
        elif kind in PER_CASE and at and case.isdigit():
            out.setdefault(kind, set()).add(int(case))
        elif kind in PER_CASE:
            raise ValueError(f"--inject {item!r}: say which case, {kind}@N")
        else:
            raise ValueError(f"unknown --inject {item!r}; known: {', '.join(DATA_RULES + PER_CASE)} (@N)")
    return out


class Injection:
    """The faults of one --inject spec, installed in the child's modules."""

    def __init__(self, spec: str) -> None:
        self.faults = parse(spec)
        self.case = -1  # the case the child is running (set by the child before each case)

    def install(self) -> None:
        from executorch_numpy_runtime import bundled, npz_inputs
        faults = self.faults
        if "bpte-indexerror" in faults:
            orig = bundled.parse

            def parse_indexerror(data):
                if len(data) % 5 == 0:
                    raise IndexError("injected")
                return orig(data)
            bundled.parse = parse_indexerror
        if any(k in faults for k in PER_CASE):
            orig2 = bundled.parse

            def parse_faulty(data):
                if self.case in faults.get("bpte-crash", ()):
                    os.kill(os.getpid(), signal.SIGSEGV)
                if self.case in faults.get("bpte-hang", ()):
                    time.sleep(3600)
                if self.case in faults.get("bpte-spin", ()):
                    while True:
                        pass
                return orig2(data)
            bundled.parse = parse_faulty
        if "npz-keyerror" in faults:
            orig3 = npz_inputs._keys

            def keys(path, files, method, names):
                if len(files) != len(set(files)) or len(files) > len(names) + 1:
                    raise KeyError("injected")
                return orig3(path, files, method, names)
            npz_inputs._keys = keys
