#!/usr/bin/env python3
"""List each operator and delegate a program uses and whether this runtime implements it.

    python tools/op_coverage.py MODEL.pte [MODEL.pte ...]

Exit status 1 when any operator or backend is missing.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import executorch_numpy_runtime as en  # noqa: E402


def main(paths):
    info = en.runtime_info()
    ops, backends = set(info["operators"]), set(info["backends"])
    missing = 0
    for path in paths:
        prog = en.Runtime.get().load_program(path)
        for m in prog.method_names:
            print(f"{path} [{m}]")
            for op in prog.operators(m):
                ok = op in ops
                missing += not ok
                print(f"  {'ok     ' if ok else 'MISSING'} {op}")
            for d in sorted(set(prog.delegates(m))):
                ok = d in backends
                missing += not ok
                print(f"  {'ok     ' if ok else 'MISSING'} delegate {d}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
