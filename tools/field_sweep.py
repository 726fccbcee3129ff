"""Field sweep: every aligned 32-bit field of a program that holds a small number (1..65536: a dim,
a count, a value id, an offset) set to each of VALUES in turn, one field at a time; each variant
loaded and every method with stored inputs run on them (NAME.npz beside NAME.pte). A variant must
load and run, or raise an ExecuTorchError; a crash (a signal), a variant running past --timeout or another
Python exception is reported with the field's offset, and with --keep DIR the variant is written
there (for tests/fuzz_corpus). Systematic where the fuzzers are random: it found a division by a
zero channel count and a read of a value nothing wrote (tests/fuzz_corpus/crash-depthwise-*,
crash-convert-*).

    python tools/field_sweep.py [--values 0,1,0xffffffff] [--bytes] [--keep DIR] [PROGRAM.pte ...]

Default programs: tests/models/*.pte but the LLM ones (slow to run thousands of times). Exit 1 on a
finding. A child process sweeps a program; after a crash a new one resumes past the field.
"""
from __future__ import annotations

import argparse
import glob
import os
import select
import struct
import subprocess
import sys

CHILD = r"""
import struct, sys
import numpy as np
import executorch_numpy_runtime as en
path, start, value, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
src = open(path, "rb").read()
inputs = {}
npz = path[:-4] + ".npz"
if __import__("os").path.exists(npz):
    with np.load(npz) as z:
        for k in z.files:
            if ":in:" in k:
                name, _, i = k.rpartition(":in:")
                inputs.setdefault(name, {})[int(i)] = z[k]
rt = en.Runtime.get()
for pos in range(start, len(src) - width + 1, width):
    if width == 4:
        v = struct.unpack_from("<I", src, pos)[0]
        if not 1 <= v <= 65536 or v == value:
            continue
    elif src[pos] == value & 0xFF:
        continue
    print("AT", pos, flush=True)
    b = bytearray(src)
    if width == 4:
        struct.pack_into("<I", b, pos, value)
    else:
        b[pos] = value & 0xFF
    try:
        prog = rt.load_program(bytes(b))
        for name in prog.method_names:
            ins = inputs.get(name)
            m = prog.load_method(name)
            if ins:
                m([ins[i] for i in sorted(ins)])
    except en.ExecuTorchError:
        pass
    except Exception as e:
        print("FINDING", pos, type(e).__name__, str(e).replace("\n", " ")[:200], flush=True)
print("DONE", flush=True)
"""


def run_child(args: list[str], timeout: float) -> tuple[list[str], object]:
    """The child's output lines and exit status ("timeout" when one variant took over TIMEOUT seconds:
    the child is killed, its lines so far kept)."""
    p = subprocess.Popen([sys.executable, "-c", CHILD] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    lines = []
    while True:
        ready, _, _ = select.select([p.stdout], [], [], timeout)
        if not ready:
            p.kill()
            p.wait()
            return lines, "timeout"
        line = p.stdout.readline()
        if not line:
            return lines, p.wait()
        lines.append(line.rstrip("\n"))


def sweep(path: str, value: int, timeout: float, keep: str | None, width: int = 4) -> list[str]:
    findings, start = [], 0
    while True:
        lines, rc = run_child([path, str(start), str(value), str(width)], timeout)
        findings += [f"{os.path.basename(path)} value {value:#x}: {l}" for l in lines if l.startswith("FINDING")]
        if "DONE" in lines:
            return findings
        at = [int(l.split()[1]) for l in lines if l.startswith("AT ")]
        if not at:
            return findings + [f"{os.path.basename(path)}: the child failed before any field (rc {rc})"]
        pos = at[-1]
        findings.append(f"{os.path.basename(path)} value {value:#x}: field at {pos}: {'hang' if rc == 'timeout' else f'crash (rc {rc})'}")
        if keep:
            b = bytearray(open(path, "rb").read())
            if width == 4:
                struct.pack_into("<I", b, pos, value)
            else:
                b[pos] = value & 0xFF
            os.makedirs(keep, exist_ok=True)
            with open(os.path.join(keep, f"crash-{os.path.basename(path)[:-4]}-{pos}-{value:x}"), "wb") as fh:
                fh.write(b)
        start = pos + width


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--values", default="0,1,0xffffffff", help="comma-separated")
    ap.add_argument("--timeout", type=float, default=60, help="seconds one variant may take (a hang past it is a finding)")
    ap.add_argument("--keep", help="write each crashing variant here")
    ap.add_argument("--bytes", action="store_true", help="every byte (not only small aligned 32-bit numbers) set to "
                    "each value's low byte: flatbuffer tags, dtypes, bools, offsets' low bytes")
    args = ap.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    programs = args.programs or sorted(p for p in glob.glob(os.path.join(root, "tests", "models", "*.pte"))
                                       if not os.path.basename(p).startswith("llm_"))
    findings = []
    values = [int(v, 0) for v in args.values.split(",")]
    for value in values:
        for p in programs:
            f = sweep(p, value, args.timeout, args.keep, 1 if args.bytes else 4)
            for line in f:
                print(line, flush=True)
            findings += f
    print(f"field_sweep: {len(programs)} programs x {len(values)} values, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
