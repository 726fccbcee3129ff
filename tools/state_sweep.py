"""State sweep: looks for memory that one program's call can read after another program wrote it.
Every aligned 32-bit field of a program holding a small number (below --values: value ids, dims,
counts), and every pair of equal neighbouring such fields (a kernel's out and the return that repeats
it), is set to each smaller number in turn; each variant runs its "forward" on the stored inputs
(NAME.npz beside NAME.pte) in a fresh Runtime on the same thread alone, then a second method of the
same program; and in another fresh Runtime right after the intact program ran. A variant whose
outputs differ between the first two changed what a program's methods share (it found kernels
writing into a program's constants); one whose outputs differ between alone and after the intact
program - or that fails alone and runs after it - read buffers the intact program left behind (it
found XNNPACK graphs reading a value nothing writes from the runtime's shared buffers). Reading a
method's own planned memory before anything writes it (the previous call's values, as in ExecuTorch)
is not reported: every run starts from a fresh method.

    python tools/state_sweep.py [--values 10] [--first OFFSET] [--last OFFSET] [PROGRAM.pte ...]

Default programs: tests/models/*.pte under 60 KB with stored inputs. A program whose intact outputs
already differ between two runtimes (random ops) is skipped. One child process a program; a crash
is reported and the sweep goes on with the next program. Exit 1 on a finding.
"""
from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys

CHILD = r"""
import struct, sys
import numpy as np
import executorch_numpy_runtime as en
path, limit, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
src = open(path, "rb").read()
with np.load(path[:-4] + ".npz") as z:
    keys = sorted((k for k in z.files if k.startswith("forward:in:")), key=lambda k: int(k.rsplit(":", 1)[1]))
    inputs = [z[k] for k in keys]

def outputs(m):
    try:
        return [np.array(x, copy=True) for x in m(inputs)]
    except en.ExecuTorchError as e:
        return type(e).__name__

def run(prog, after_intact, second_method=False):
    rt = en.Runtime(num_threads=1)
    try:
        if after_intact:
            rt.load_program(src).load_method("forward")(inputs)
        p = rt.load_program(prog)
        first = outputs(p.load_method("forward"))
        return (first, outputs(p.load_method("forward"))) if second_method else first
    except en.ExecuTorchError as e:
        return (type(e).__name__,) * 2 if second_method else type(e).__name__

def same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype and
                                    np.array_equal(x, y, equal_nan=x.dtype.kind in "fc") for x, y in zip(a, b))

intact = run(src, False)
if isinstance(intact, str):
    print(f"SKIP the intact program does not run on the stored inputs ({intact})", flush=True)
    sys.exit(0)
if not same(intact, run(src, True)):
    print("SKIP the intact program's outputs differ between runtimes", flush=True)
    sys.exit(0)
ran = 0
for pos in range(first - first % 4, min(len(src) - 3, last), 4):
    v = struct.unpack_from("<I", src, pos)[0]
    if v >= limit:
        continue
    width = 2 if pos + 8 <= len(src) and struct.unpack_from("<I", src, pos + 4)[0] == v else 1
    for w in range(1, width + 1):
        for nv in range(limit):
            if nv == v:
                continue
            b = bytearray(src)
            for k in range(w):
                struct.pack_into("<I", b, pos + 4 * k, nv)
            (a, a2), c = run(bytes(b), False, True), run(bytes(b), True)
            if isinstance(a, str) and isinstance(c, str):
                continue
            ran += 1
            if not same(a, a2):
                print(f"FINDING at {pos} ({w} field(s) {v} -> {nv}): a second method of the program computes "
                      f"otherwise after the first one's call (it changed what the methods share: constants)", flush=True)
            elif not same(a, c):
                print(f"FINDING at {pos} ({w} field(s) {v} -> {nv}): alone {a if isinstance(a, str) else 'ran'}, "
                      f"after the intact program {c if isinstance(c, str) else 'ran'}"
                      + ("" if isinstance(a, str) or isinstance(c, str) else ", outputs differ"), flush=True)
print(f"DONE {ran} variants ran", flush=True)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--values", type=int, default=10, help="fields below this are set to each smaller number")
    ap.add_argument("--first", type=int, default=0, help="first byte offset swept")
    ap.add_argument("--last", type=int, default=1 << 40, help="offset the sweep stops at")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    progs = a.programs or sorted(p for p in glob.glob(os.path.join(root, "tests", "models", "*.pte"))
                                 if os.path.getsize(p) < 60000 and os.path.exists(p[:-4] + ".npz"))
    findings = 0
    for p in progs:
        if not os.path.exists(p[:-4] + ".npz"):
            print(f"{os.path.basename(p)}: no stored inputs, skipped")
            continue
        r = subprocess.run([sys.executable, "-c", CHILD, p, str(a.values), str(a.first), str(a.last)],
                           capture_output=True, text=True)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("FINDING", "DONE", "SKIP"))]
        found = [ln for ln in lines if ln.startswith("FINDING")]
        if r.returncode != 0:
            found.append(f"CRASH: child exited with {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
        findings += len(found)
        print(f"{os.path.basename(p)}: " + (lines[-1] if lines else "no result"), flush=True)
        for ln in found:
            print("  " + ln, flush=True)
    print(f"{findings} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
