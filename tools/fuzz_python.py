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
is a finding: another exception type escaping, a crash (signal), a hang longer than
--case-timeout, or memory exhaustion under the --mem-mb address-space limit (MemoryError).

The cases run in a child process (RLIMIT_AS, a watchdog per case); after a crash or a hang the
parent saves the reproducer and starts a new child at the next case. Reproducers (and a .txt with
the exception and traceback) go to --out.

    python tools/fuzz_python.py --seconds 60 --out build/fuzz_python [--seed 1] [--max-cases N]
    python tools/fuzz_python.py --replay FORMAT FILE      # run one saved input, raise what it raises

Exit status 0 when there is no finding (other than --known ones), 1 otherwise (2: usage).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
import zipfile
from typing import Callable, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "tests", "models")
CORPUS = os.path.join(ROOT, "tests", "fuzz_corpus")
FORMATS = ("bpte", "ptd", "npz", "wcache")
EXT = {"bpte": ".bpte", "ptd": ".ptd", "npz": ".npz", "wcache": ".etnpwc"}


def _read(name: str) -> bytes:
    with open(os.path.join(MODELS, name), "rb") as f:
        return f.read()


def _corpus_seeds(fmt: str) -> List[bytes]:
    """Kept inputs of this format (tests/fuzz_corpus/pyseed-FMT-*): seeds too."""
    out = []
    if os.path.isdir(CORPUS):
        for n in sorted(os.listdir(CORPUS)):
            if n.startswith(f"pyseed-{fmt}-") or n.startswith(f"pycrash-{fmt}-"):
                with open(os.path.join(CORPUS, n), "rb") as f:
                    out.append(f.read())
    return out


# ---------------------------------------------------------------------------------------------
# mutators (pure functions of an RNG and bytes: a case is reproducible from its index)

_INT8 = (0, 1, 0x7F, 0x80, 0xFF)
_INT16 = (0, 1, 0x7FFF, 0x8000, 0xFFFF)
_INT32 = (0, 1, 2, 4, 8, 16, 64, 4096, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE)
_INT64 = (0, 1, 1 << 31, 1 << 32, 1 << 62, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)


def _put(b: bytearray, i: int, v: int, size: int) -> None:
    for k in range(size):
        if i + k < len(b):
            b[i + k] = (v >> (8 * k)) & 0xFF


def _get(b: bytearray, i: int, size: int) -> int:
    return sum(b[i + k] << (8 * k) for k in range(size) if i + k < len(b))


def mutate_bytes(rng: random.Random, data: bytes, seeds: List[bytes]) -> bytes:
    """1 to 4 byte-level mutations, some aware of flatbuffer layout (aligned offsets, vtable
    entries, 64-bit header fields): flips, interesting values, offsets near the end of the file,
    truncation, insertion, deletion, duplication, splices from another seed."""
    b = bytearray(data)
    for _ in range(1 + rng.randrange(4)):
        if not b:
            b += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
            continue
        n = len(b)
        i = rng.randrange(n)
        op = rng.randrange(14)
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i] = rng.randrange(256)
        elif op == 2:
            _put(b, i, rng.choice(_INT8), 1)
        elif op == 3:
            _put(b, i & ~1, rng.choice(_INT16), 2)
        elif op == 4:  # an aligned 32-bit field: an interesting value or an offset near the end
            j = i & ~3
            v = rng.choice(_INT32 + (n, n - 1, n - 4, n + 4, n // 2, j, (n - j) & 0xFFFFFFFF))
            _put(b, j, v & 0xFFFFFFFF, 4)
        elif op == 5:  # nudge an aligned 32-bit field (offsets, lengths, counts)
            j = i & ~3
            _put(b, j, (_get(b, j, 4) + rng.randrange(-8, 9)) & 0xFFFFFFFF, 4)
        elif op == 6:  # an aligned 64-bit field (segment offsets and sizes of extended headers)
            j = i & ~7
            _put(b, j, rng.choice(_INT64 + (n, n + 8)) & ((1 << 64) - 1), 8)
        elif op == 7:
            del b[i:]
        elif op == 8:
            del b[i:i + rng.randrange(1, 64)]
        elif op == 9:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
        elif op == 10:  # duplicate a range
            k = rng.randrange(1, 64)
            b[i:i] = b[i:i + k]
        elif op == 11:  # splice from another seed
            o = rng.choice(seeds)
            if o:
                j = rng.randrange(len(o))
                k = rng.randrange(1, 128)
                b[i:i + k] = o[j:j + k]
        elif op == 12:  # copy an aligned word elsewhere (offsets pointing at other tables)
            j, k = i & ~3, rng.randrange(n) & ~3
            b[j:j + 4] = b[k:k + 4]
        else:  # a vtable entry (16-bit) made to point elsewhere or cleared
            j = i & ~1
            _put(b, j, rng.choice((0, 2, 4, 8, 0xFFFC, _get(b, j, 2) + 4)) & 0xFFFF, 2)
    return bytes(b)


# .npz structure: archives rebuilt from mutated members (valid CRCs: the readers get past them)

_DESCRS = ("<f4", "<f8", "<i8", "<i4", "|b1", "|u1", "<f2", ">f4", "<u2", "|O", "<U3", "|S0", "|V4",
           "<M8[s]", "<c8", "[('a', '<f4')]", "'<f4'", "f4", "", "<f-1", "<i99", "x")
_SHAPES = ("()", "(0,)", "(1,)", "(-1,)", "(4, 16)", "(16, 4)", "(2, 3)", "(1, 1, 4)", "(1, 3, 4)",
           "(4294967296, 4294967296)", "(99999999999999999999,)", "(1.5,)", "('a',)", "[4, 16]",
           "(" + "1, " * 40 + ")", "(3, 4)", "(2, 6, 3)", "None", "(4, 16, 0)")
_KEYS = ("forward:in:0", "forward:in:1", "input_0", "input_1", "in0", "in1", "arr_0", "arr_1", "arr_00",
         "in99999999999999999999", "forward:in:-1", "forward:out:0", "other:in:0", "", "/", "../x",
         "x\u00e9\u4e2d", "forward:in:0.npy", "forward:in:0\x00", "input_0 ")


def _npy(rng: random.Random, arr, intact: bool) -> bytes:
    import numpy as np
    from numpy.lib import format as npformat
    buf = io.BytesIO()
    npformat.write_array(buf, np.asarray(arr), allow_pickle=False)
    raw = bytearray(buf.getvalue())
    if intact:  # this member as np.save writes it
        return bytes(raw)
    hlen = struct.unpack_from("<H", raw, 8)[0]
    header, body = raw[10:10 + hlen].decode("latin1"), raw[10 + hlen:]
    d = {"descr": repr(np.asarray(arr).dtype.str), "fortran_order": "False", "shape": repr(tuple(arr.shape))}
    what = rng.randrange(8)
    if what == 0:
        d["descr"] = repr(rng.choice(_DESCRS)) if rng.randrange(3) else rng.choice(_DESCRS)
    elif what == 1:
        d["shape"] = rng.choice(_SHAPES)
    elif what == 2:
        d["fortran_order"] = rng.choice(("True", "1", "'x'", "None"))
    elif what == 3:
        d.pop(rng.choice(list(d)))
    elif what == 4:
        d["extra"] = "1"
    if what < 5:
        header = "{" + ", ".join(f"'{k}': {v}" for k, v in d.items()) + ", }"
        header = header.ljust((len(header) + 10 + 64) // 64 * 64 - 10 - 1) + "\n"
    elif what == 5:  # free-form garbage in the header
        header = rng.choice(("{", "}", "[]", "{'descr': 1}", "\xff\xfe", "{'descr': '<f4', 'shape': (4,16),}",
                             "__import__('os')", "{" * 200, "{'shape': (" + "9" * 400 + ",)}"))
    magic = bytearray(raw[:8])
    version = rng.randrange(6)
    if version == 0:
        magic[6:8] = bytes(rng.choice(((2, 0), (3, 0), (0, 0), (9, 9), (1, 255))))
    out = bytearray(magic)
    hb = header.encode("latin1", "replace")
    if magic[6] in (2, 3):
        out += struct.pack("<I", len(hb))
    else:
        out += struct.pack("<H", len(hb) & 0xFFFF)
    out += hb
    if rng.randrange(6) == 0:  # header length field made wrong
        _put(out, 8, rng.choice((0, 1, len(hb) + 7, 0xFFFF)), 2)
    if what == 6:
        body = body[:rng.randrange(len(body) + 1)]
    elif what == 7:
        body = body + bytes(rng.randrange(1, 64))
    return bytes(out + body)


def _zip_patch(rng: random.Random, z: bytes) -> bytes:
    """Patches the zip headers: flag bits (encryption, data descriptor), compression method,
    sizes, the file name length, extra fields, the central directory's counts and offset."""
    b = bytearray(z)
    sites = [("L", i) for i in range(len(b) - 4) if b[i:i + 4] == b"PK\x03\x04"]
    sites += [("C", i) for i in range(len(b) - 4) if b[i:i + 4] == b"PK\x01\x02"]
    sites += [("E", i) for i in range(len(b) - 4) if b[i:i + 4] == b"PK\x05\x06"]
    if not sites:
        return bytes(b)
    kind, i = rng.choice(sites)
    # (offset, size) of the fields worth patching, per header kind
    fields = {"L": ((6, 2), (8, 2), (18, 4), (22, 4), (26, 2), (28, 2)),
              "C": ((8, 2), (10, 2), (20, 4), (24, 4), (28, 2), (30, 2), (32, 2), (38, 4), (42, 4)),
              "E": ((8, 2), (10, 2), (12, 4), (16, 4), (20, 2))}[kind]
    off, size = rng.choice(fields)
    if (kind, off) in (("L", 6), ("C", 8)):
        v = _get(b, i + off, 2) ^ rng.choice((1, 8, 0x40, 0x800, 0x2000))
    elif (kind, off) in (("L", 8), ("C", 10)):
        v = rng.choice((0, 1, 6, 8, 9, 12, 14, 93, 95, 99, 0xFFFF))
    else:
        v = rng.choice((0, 1, 2, 0xFFFF, 0xFFFFFFFF, _get(b, i + off, size) + rng.randrange(-16, 17),
                        len(b), len(b) * 1000))
    _put(b, i + off, v & ((1 << (8 * size)) - 1), size)
    return bytes(b)


def mutate_npz(rng: random.Random, seed: bytes, seeds: List[bytes]) -> bytes:
    import numpy as np
    what = rng.randrange(10)
    if what < 3:  # bytes of the archive
        return mutate_bytes(rng, seed, seeds)
    with np.load(io.BytesIO(seed), allow_pickle=False) as z:
        members = [(k, z[k]) for k in z.files]
    if what == 3 and members:  # add, drop, rename or duplicate a member
        act = rng.randrange(4)
        k = rng.randrange(len(members))
        if act == 0:
            members.pop(k)
        elif act == 1:
            members[k] = (rng.choice(_KEYS), members[k][1])
        elif act == 2:
            members.append(members[k])
        else:
            members.append((rng.choice(_KEYS), np.zeros(rng.choice(((4, 16), (1,), (), (3, 4))),
                                                         rng.choice(("float32", "int64", "bool", "float64")))))
    elif what == 4 and members:  # a member's array with another dtype or shape (a valid .npy)
        k = rng.randrange(len(members))
        a = members[k][1]
        choice = rng.randrange(5)
        if choice == 0:
            a = a.astype(rng.choice(("float64", "float16", "int32", "int64", "bool", "uint8", "complex64")))
        elif choice == 1:
            a = a.reshape(-1)
        elif choice == 2:
            a = np.zeros((0,) + a.shape[1:], a.dtype)
        elif choice == 3:
            a = np.asfortranarray(np.stack([a, a])) if a.ndim else np.stack([a, a])
        else:
            a = np.array(["ab", "c"]) if rng.randrange(2) else np.zeros(a.shape, dtype=[("f", "<f4")])
        members[k] = (members[k][0], a)
    buf = io.BytesIO()
    compress = rng.randrange(3) == 0
    with warnings.catch_warnings(), \
            zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as zf:
        warnings.simplefilter("ignore")  # "Duplicate name": wanted here
        broken = rng.randrange(len(members)) if members and what >= 5 else -1
        for k, (key, arr) in enumerate(members):
            name = key if key.endswith(".npy") and rng.randrange(2) else key + ".npy"
            zf.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), _npy(rng, arr, k != broken))
    out = buf.getvalue()
    if what >= 8:
        out = _zip_patch(rng, out)
    return out


# ---------------------------------------------------------------------------------------------
# targets

class Target:
    """One format: its seeds, its mutator, and the code under test (``run(data, case)``)."""

    name = ""

    def seeds(self) -> List[bytes]:
        raise NotImplementedError

    def mutate(self, rng: random.Random, seed: bytes, seeds: List[bytes]) -> bytes:
        return mutate_bytes(rng, seed, seeds)

    def generate(self, seed: int, case: int) -> bytes:
        rng = random.Random(f"{seed}:{self.name}:{case}")
        seeds = self.seeds()
        data = rng.choice(seeds)
        for _ in range(1 if rng.randrange(4) else 2):  # sometimes mutate a mutant
            data = self.mutate(rng, data, seeds)
        return data

    def run(self, data: bytes, case: int, tmp: str) -> str:
        raise NotImplementedError


def _bpte_fields(data: bytes) -> List[Tuple[int, int]]:
    """(position, size) of the test-case fields of a bundled program: each value's kind, and for
    tensors the dtype code, the sizes, the dim order and the data vector's length."""
    from executorch_numpy_runtime import bundled
    r = bundled._Reader(data)
    out: List[Tuple[int, int]] = []
    root = r.u32(0)
    for s in r.tables(root, 1):
        for c in r.tables(s, 1):
            for side in (0, 1):
                out.append((r.positions(c, side)[0] - 4, 4))  # the values vector's length
                for v in r.tables(c, side):
                    kind = r.field(v, 0)
                    if kind:
                        out.append((kind, 1))
                    t = r.table(v, 1)
                    if t is None:
                        continue
                    if r.scalar(v, 0, "B") != 1:
                        f = r.field(t, 0)
                        if f:
                            out.append((f, 8))
                        continue
                    code = r.field(t, 0)
                    if code:
                        out.append((code, 1))
                    for i, size in ((1, 4), (3, 1)):  # sizes (int32), dim_order (uint8)
                        start, n = r.positions(t, i)
                        out += [(start - 4, 4)] + [(start + size * k, size) for k in range(n)]
                    start, n = r.positions(t, 2)
                    out.append((start - 4, 4))
    return out


def mutate_bpte(rng: random.Random, data: bytes, seeds: List[bytes]) -> bytes:
    """Field-aware: a value's kind, a tensor's dtype code, sizes, dim order or data length set to
    an interesting value; else (or when the input does not parse) byte mutations."""
    if rng.randrange(5) < 2:
        try:
            fields = _bpte_fields(data)
        except Exception:
            fields = []
        if fields:
            b = bytearray(data)
            for _ in range(1 + rng.randrange(2)):
                pos, size = rng.choice(fields)
                pool = {1: (0, 1, 2, 3, 4, 5, 6, 7, 11, 15, 17, 22, 0x7F, 0x80, 0xFF), 4: _INT32 + (3, 6, 18, 72),
                        8: _INT64}[size]
                _put(b, pos, rng.choice(pool) & ((1 << (8 * size)) - 1), size)
            return bytes(b)
    return mutate_bytes(rng, data, seeds)


class BundledTarget(Target):
    name = "bpte"

    def seeds(self) -> List[bytes]:
        return [_read("mlp_bundled.bpte"), _read("mlp_bundled_bad.bpte")] + _corpus_seeds(self.name)

    def mutate(self, rng: random.Random, seed: bytes, seeds: List[bytes]) -> bytes:
        return mutate_bpte(rng, seed, seeds)

    def run(self, data: bytes, case: int, tmp: str) -> str:
        import executorch_numpy_runtime as en
        from executorch_numpy_runtime import bundled
        rt = en.Runtime.get()
        bp = bundled.parse(data)
        for s in bp.suites:  # what the parse gave must be usable
            for c in s.test_cases:
                len(c.inputs), len(c.expected_outputs)
        if case % 8 == 0:  # the path branch of load_program (is_bundled on the head, then parse)
            path = os.path.join(tmp, "case.bpte")
            with open(path, "wb") as f:
                f.write(data)
            prog = rt.load_program(path)
        else:
            prog = rt.load_program(data)
        for name in prog.method_names:
            try:
                prog.load_method(name)
            except en.ExecuTorchError:
                pass
        results = bundled.verify(rt, data)
        return f"loaded, {sum(r.passed for r in results)}/{len(results)} cases pass"


class PtdTarget(Target):
    name = "ptd"
    PAIRS = (("mlp_external.pte", "mlp_external.ptd", "mlp_external.npz"),
             ("mlp_external_xnn.pte", "mlp_external_xnn.ptd", "mlp_external_xnn.npz"))

    def __init__(self) -> None:
        self._progs: Dict[bytes, Tuple[bytes, object]] = {}

    def seeds(self) -> List[bytes]:
        return [_read(p[1]) for p in self.PAIRS] + _corpus_seeds(self.name)

    def _program_for(self, case: int) -> Tuple[bytes, object]:
        import numpy as np
        pte, _, npz = self.PAIRS[case % len(self.PAIRS)]
        if pte not in self._progs:
            with np.load(os.path.join(MODELS, npz)) as z:
                self._progs[pte] = (_read(pte), z["forward:in:0"])
        return self._progs[pte]

    def run(self, data: bytes, case: int, tmp: str) -> str:
        import executorch_numpy_runtime as en
        pte, x = self._program_for(case)
        prog = en.Runtime.get().load_program(pte, data_files=[data])
        method = prog.load_method("forward")
        out = method([x])
        return f"ran, {len(out)} outputs"


class NpzTarget(Target):
    """The CLI's `run` (and `batch` with one stacked .npz) on a mutated inputs file."""

    name = "npz"
    MODELS_ = (("mlp.pte", "mlp.npz"), ("kv_state.pte", "kv_state.npz"), ("int_bool.pte", "int_bool.npz"),
               ("named_io.pte", "named_io.npz"))

    def __init__(self) -> None:
        self._seeds: Optional[List[bytes]] = None

    def seeds(self) -> List[bytes]:
        if self._seeds is None:
            import numpy as np
            seeds = [_read(npz) for _, npz in self.MODELS_]
            # a stacked batch (etnp batch MODEL --inputs ONE.npz): two items of mlp's input
            with np.load(os.path.join(MODELS, "mlp.npz")) as z:
                x = z["forward:in:0"]
            buf = io.BytesIO()
            np.savez(buf, input_0=np.stack([x, x]))
            self._seeds = seeds + [buf.getvalue()] + _corpus_seeds(self.name)
        return self._seeds

    def mutate(self, rng: random.Random, seed: bytes, seeds: List[bytes]) -> bytes:
        try:
            return mutate_npz(rng, seed, seeds)
        except Exception:  # a mutant seed that numpy cannot read: mutate its bytes instead
            return mutate_bytes(rng, seed, seeds)

    def run(self, data: bytes, case: int, tmp: str) -> str:
        from executorch_numpy_runtime import cli
        model = os.path.join(MODELS, self.MODELS_[case % len(self.MODELS_)][0])
        inp = os.path.join(tmp, "in.npz")
        with open(inp, "wb") as f:
            f.write(data)
        if case % 5 == 4:
            argv = ["batch", os.path.join(MODELS, "mlp.pte"), "--inputs", inp, "--out", os.path.join(tmp, "outdir")]
        else:
            argv = ["run", model, "--inputs", inp, "--out", os.path.join(tmp, "out.npz")]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main(argv)
            except SystemExit as e:  # argparse: exit status 2 with an error line
                rc = e.code if isinstance(e.code, int) else 1
        if rc == 0:
            return "exit 0"
        if rc in (1, 2) and "error:" in err.getvalue():
            raise CliRejected(f"exit {rc}: {err.getvalue().strip().splitlines()[-1][:200]}")
        raise _BadExit(f"exit status {rc!r} without an 'error:' line; stderr: {err.getvalue()[-500:]!r}")


class _BadExit(Exception):
    """The CLI ended with a status other than 0, or 1/2 with an error line: a finding."""


class CliRejected(ValueError):
    """The CLI refused the input as documented (exit status 1 or 2, an `error:` line)."""


# ---- weight cache files (native/src/runtime/weight_cache.h) ----

_M64 = (1 << 64) - 1
_K = 0x9E3779B97F4A7C15
WC_HEADER = struct.Struct("<8s4I5Q")  # magic, format, packing, byte order, pointer bits, cpu key,
#                                       sections, table offset, file size, hash
WC_ENTRY = struct.Struct("<4Q")       # key, offset, size, content hash


def wc_hash(b: bytes) -> int:
    """util/content_hash.cpp's ContentHash (little-endian hosts)."""
    h = [0, _K, ~_K & _M64, 1]
    n = len(b)
    full = n - n % 32
    words = struct.unpack_from(f"<{full // 8}Q", b, 0)
    for i in range(0, len(words), 4):
        for lane in range(4):
            x = ((h[lane] ^ words[i + lane]) * _K) & _M64
            h[lane] = ((x << 29) | (x >> 35)) & _M64
    t = 0
    for c in b[full:]:
        t = (((t << 8) | c) * 31 + c) & _M64
    r = h[0] ^ (h[1] * 3 & _M64) ^ (h[2] * 5 & _M64) ^ (h[3] * 7 & _M64) ^ t ^ (n * _K & _M64)
    return ((r ^ (r >> 31)) * _K) & _M64


def wc_reseal(data: bytes, fix_size: bool = True) -> bytes:
    """DATA with its sections' and header's hashes (and file size) recomputed where the header
    and table can be read: a mutation then reaches the section parser."""
    b = bytearray(data)
    if len(b) < WC_HEADER.size:
        return bytes(b)
    f = list(WC_HEADER.unpack_from(b, 0))
    count, table = f[6], f[7]
    if fix_size:
        f[8] = len(b)
    if count > 4096 or table > len(b) or table + count * WC_ENTRY.size > len(b):
        return bytes(b)
    for i in range(count):
        at = table + i * WC_ENTRY.size
        key, off, size, _ = WC_ENTRY.unpack_from(b, at)
        if off + size <= len(b):
            WC_ENTRY.pack_into(b, at, key, off, size, wc_hash(bytes(b[off:off + size])))
    f[9] = 0
    head = WC_HEADER.pack(*f)
    f[9] = wc_hash(head + bytes(b[table:table + count * WC_ENTRY.size]))
    WC_HEADER.pack_into(b, 0, *f)
    return bytes(b)


class WeightCacheTarget(Target):
    name = "wcache"
    MODELS_ = ("qcnn_static_xnn", "qlinear_dyn_xnn", "q8da4w_xnn", "conv_regimes_xnn", "channels_last_xnn")

    def __init__(self) -> None:
        self._seeds: Optional[List[bytes]] = None
        self._inputs: Dict[str, object] = {}

    def seeds(self) -> List[bytes]:
        if self._seeds is None:  # each program's cache, written by this build on this CPU path
            import executorch_numpy_runtime as en
            self._seeds = []
            with tempfile.TemporaryDirectory() as d:
                for m in self.MODELS_:
                    path = os.path.join(d, m + ".etnpwc")
                    en.Runtime.get().load_program(os.path.join(MODELS, m + ".pte"), weight_cache=path).load_method("forward")
                    with open(path, "rb") as fh:
                        self._seeds.append(fh.read())
            self._seeds += _corpus_seeds(self.name)
        return self._seeds

    def generate(self, seed: int, case: int) -> bytes:  # (case i mutates program i's cache: a hit if intact)
        rng = random.Random(f"{seed}:{self.name}:{case}")
        seeds = self.seeds()
        data = seeds[case % len(self.MODELS_)]
        for _ in range(1 if rng.randrange(4) else 2):
            data = self.mutate(rng, data, seeds)
        return data

    def mutate(self, rng: random.Random, seed: bytes, seeds: List[bytes]) -> bytes:
        data = mutate_bytes(rng, seed, seeds)
        return wc_reseal(data, rng.random() < 0.8) if rng.random() < 0.5 else data

    def run(self, data: bytes, case: int, tmp: str) -> str:
        import numpy as np
        import executorch_numpy_runtime as en
        # the seed's program (a cache of another program is a miss: rewritten)
        name = self.MODELS_[case % len(self.MODELS_)]
        if name not in self._inputs:
            with np.load(os.path.join(MODELS, name + ".npz")) as z:
                n = len([k for k in z.files if k.startswith("forward:in:")])
                self._inputs[name] = [z[f"forward:in:{i}"] for i in range(n)]
        path = os.path.join(tmp, "c.etnpwc")
        with open(path, "wb") as fh:
            fh.write(data)
        prog = en.Runtime.get().load_program(os.path.join(MODELS, name + ".pte"), weight_cache=path)
        method = prog.load_method("forward")
        hit = method.memory_stats()["mapped_weights"] > 0
        out = method(self._inputs[name])
        return f"ran ({'hit' if hit else 'miss'}), {len(out)} outputs"


TARGETS: Dict[str, Callable[[], Target]] = {"bpte": BundledTarget, "ptd": PtdTarget, "npz": NpzTarget,
                                            "wcache": WeightCacheTarget}


def acceptable(e: BaseException) -> bool:
    """The project's documented failures (see the module's docstring)."""
    from executorch_numpy_runtime import ExecuTorchError
    if isinstance(e, ExecuTorchError):
        return True
    if isinstance(e, (ValueError, TypeError)) and not isinstance(e, UnicodeError):
        return bool(str(e).strip())
    return False


# ---------------------------------------------------------------------------------------------
# the child: runs cases in-process, one JSON line per event on the report pipe

def _inject(kind: str) -> None:
    """Deliberate bugs, to show that the fuzzer (and tests/test_fuzz_formats.py) can fail."""
    from executorch_numpy_runtime import bundled, npz_inputs
    if kind == "bpte-indexerror":
        orig = bundled.parse

        def parse(data):
            if len(data) % 5 == 0:
                raise IndexError("injected")
            return orig(data)
        bundled.parse = parse
    elif kind in ("bpte-hang", "bpte-crash"):
        orig2 = bundled.parse

        def parse2(data):
            if len(data) % 7 == 3:
                if kind == "bpte-hang":
                    time.sleep(3600)
                os.kill(os.getpid(), signal.SIGSEGV)
            return orig2(data)
        bundled.parse = parse2
    elif kind == "npz-keyerror":
        orig3 = npz_inputs._keys

        def keys(path, files, method, names):
            if len(files) != len(set(files)) or len(files) > len(names) + 1:
                raise KeyError("injected")
            return orig3(path, files, method, names)
        npz_inputs._keys = keys
    elif kind:
        raise SystemExit(f"unknown --inject {kind!r}")


def child_main(args) -> int:
    _limit(args.mem_mb)
    import faulthandler
    faulthandler.enable()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import executorch_numpy_runtime  # noqa: F401  (import errors: before the first case)
    report = os.fdopen(args.report_fd, "w", buffering=1)
    # what the first case would import or create lazily (ml_dtypes takes seconds on a loaded
    # machine): before the watchdog counts
    from executorch_numpy_runtime import Runtime, dtypes
    Runtime.get()
    dtypes._bfloat16()
    _inject(args.inject)
    targets = {f: TARGETS[f]() for f in args.formats}
    start = {f: s for f, s in zip(args.formats, args.start)}
    tmp = tempfile.mkdtemp(prefix="etnp-fuzz-")
    # round robin over the formats, each from its own next case index
    todo = [f for f in args.formats if start[f] < args.max_cases]
    while todo:
        for fmt in list(todo):
            case = start[fmt]
            start[fmt] += 1
            if start[fmt] >= args.max_cases:
                todo.remove(fmt)
            t = targets[fmt]
            data = t.generate(args.seed, case)
            report.write(json.dumps({"ev": "start", "fmt": fmt, "case": case}) + "\n")
            outcome, detail = "ok", ""
            try:
                detail = t.run(data, case, tmp)
            except MemoryError as e:
                outcome, detail = "finding", _tb(e)
            except Exception as e:
                if acceptable(e):
                    outcome, detail = "rejected", f"{type(e).__name__}: {str(e)[:200]}"
                else:
                    outcome, detail = "finding", _tb(e)
            report.write(json.dumps({"ev": "end", "fmt": fmt, "case": case, "outcome": outcome,
                                     "detail": detail}) + "\n")
    report.write(json.dumps({"ev": "done"}) + "\n")
    return 0


def _tb(e: BaseException) -> str:
    return "".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:]


# ---------------------------------------------------------------------------------------------
# the parent: starts children under RLIMIT_AS, watches each case, saves reproducers

def _limit(mem_mb: int) -> None:
    """The child's own limits, set first thing in it (not in a preexec_fn: Python code between
    fork and exec can deadlock when the parent has threads - numpy's OpenBLAS pool - and did, as
    a hang before the first case)."""
    import resource
    if mem_mb > 0:
        b = mem_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (b, b))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _save(out: str, fmt: str, seed: int, case: int, kind: str, detail: str, data: bytes) -> str:
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, f"{kind}-{fmt}-seed{seed}-case{case}")
    with open(base + EXT[fmt], "wb") as f:
        f.write(data)
    with open(base + ".txt", "w") as f:
        f.write(f"format {fmt}, seed {seed}, case {case}: {kind}\n"
                f"replay: python tools/fuzz_python.py --replay {fmt} {base + EXT[fmt]} --case {case}\n\n{detail}\n")
    return base + EXT[fmt]


STARTUP_SECONDS = 300  # a child's imports and warm-up before its first case, on a very loaded machine


def parent_main(args) -> int:
    t0 = time.monotonic()
    deadline = t0 + args.seconds if args.seconds > 0 else float("inf")
    stats = {f: {"cases": 0, "ok": 0, "rejected": 0, "findings": 0} for f in args.formats}
    findings: List[str] = []
    nxt = {f: 0 for f in args.formats}
    generators = {f: TARGETS[f]() for f in args.formats}
    os.makedirs(args.out, exist_ok=True)
    log_path = os.path.join(args.out, "child-stderr.log")
    stopped_early = False
    while any(nxt[f] < args.max_cases for f in args.formats) and time.monotonic() < deadline:
        rfd, wfd = os.pipe()
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--report-fd", str(wfd),
               "--mem-mb", str(args.mem_mb), "--seed", str(args.seed), "--max-cases", str(args.max_cases),
               "--formats", ",".join(args.formats), "--start", ",".join(str(nxt[f]) for f in args.formats)]
        if args.inject:
            cmd += ["--inject", args.inject]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
        with open(log_path, "ab") as log:
            child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(wfd,),
                                     env=env, cwd=ROOT)
        os.close(wfd)
        reader = os.fdopen(rfd, "r")
        current: Optional[Tuple[str, int]] = None
        case_started = last_event = time.monotonic()
        buf = ""
        finished = False
        while True:
            now = time.monotonic()
            if current is None and not finished and now - last_event > args.case_timeout + STARTUP_SECONDS:
                child.kill()
                child.wait()
                print(f"fuzz_python: the child gave no result within {args.case_timeout + STARTUP_SECONDS:.0f} s "
                      f"of starting or of its last case (stalled between cases); see {log_path}", file=sys.stderr)
                return 2
            if current is not None and now - case_started > args.case_timeout:
                child.kill()
                child.wait()
                fmt, case = current
                data = generators[fmt].generate(args.seed, case)
                path = _save(args.out, fmt, args.seed, case, "hang", f"no result in {args.case_timeout} s", data)
                stats[fmt]["cases"] += 1
                stats[fmt]["findings"] += 1
                findings.append(f"{fmt} case {case}: hang > {args.case_timeout} s -> {path}")
                nxt[fmt] = case + 1
                break
            if now >= deadline:
                child.kill()
                child.wait()
                stopped_early = True
                break
            wait = min(0.5, max(0.01, deadline - now))
            ready, _, _ = select.select([reader], [], [], wait)
            if not ready:
                continue
            line = reader.readline()
            if not line:  # the child exited
                rc = child.wait()
                if current is not None:
                    fmt, case = current
                    data = generators[fmt].generate(args.seed, case)
                    sig = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
                    tail = ""
                    with contextlib.suppress(OSError), open(log_path, "rb") as f:
                        f.seek(0, 2)
                        f.seek(max(0, f.tell() - 3000))
                        tail = f.read().decode("utf-8", "replace")
                    path = _save(args.out, fmt, args.seed, case, "crash", f"child died: {sig}\n\n{tail}", data)
                    stats[fmt]["cases"] += 1
                    stats[fmt]["findings"] += 1
                    findings.append(f"{fmt} case {case}: crash ({sig}) -> {path}")
                    nxt[fmt] = case + 1
                elif not finished:
                    print(f"fuzz_python: the child exited ({rc}) before any case; see {log_path}", file=sys.stderr)
                    return 2
                break
            ev = json.loads(line)
            last_event = time.monotonic()
            if ev["ev"] == "start":
                current = (ev["fmt"], ev["case"])
                case_started = time.monotonic()
            elif ev["ev"] == "end":
                fmt, case = ev["fmt"], ev["case"]
                st = stats[fmt]
                st["cases"] += 1
                st[{"ok": "ok", "rejected": "rejected", "finding": "findings"}[ev["outcome"]]] += 1
                if ev["outcome"] == "finding":
                    data = generators[fmt].generate(args.seed, case)
                    path = _save(args.out, fmt, args.seed, case, "finding", ev["detail"], data)
                    last = ev["detail"].strip().splitlines()[-1] if ev["detail"].strip() else "?"
                    findings.append(f"{fmt} case {case}: {last} -> {path}")
                nxt[fmt] = case + 1
                current = None
                if args.verbose:
                    print(f"{fmt} {case}: {ev['outcome']} {ev['detail'][:150]!r}")
            elif ev["ev"] == "done":
                finished = True
                for f in args.formats:
                    nxt[f] = max(nxt[f], args.max_cases)
        reader.close()
        if child.poll() is None:
            child.kill()
            child.wait()
    elapsed = time.monotonic() - t0
    print(f"fuzz_python: seed {args.seed}, {elapsed:.1f} s{' (time limit reached)' if stopped_early else ''}")
    for f in args.formats:
        st = stats[f]
        print(f"  {f}: {st['cases']} cases ({st['ok']} ok, {st['rejected']} rejected with a documented error), "
              f"{st['findings']} findings")
    for line in findings:
        print(f"  FINDING {line}")
    total = sum(st["cases"] for st in stats.values())
    known = [f for f in findings if args.known and re.search(args.known, f)]
    print(f"fuzz_python: {total} cases, {len(findings)} findings"
          + (f" ({len(known)} of a known bug: --known {args.known!r})" if args.known else ""))
    return 1 if len(findings) > len(known) else 0


def replay_main(args) -> int:
    """Runs one saved input in this process (what the child did), letting exceptions escape."""
    import executorch_numpy_runtime  # noqa: F401
    fmt, path = args.replay
    t = TARGETS[fmt]()
    with open(path, "rb") as f:
        data = f.read()
    tmp = tempfile.mkdtemp(prefix="etnp-replay-")
    print(t.run(data, args.case, tmp))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60.0, help="stop after this long (0: no limit)")
    p.add_argument("--max-cases", type=int, default=1 << 62, help="cases per format")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=os.path.join(ROOT, "build", "fuzz_python"), help="reproducers go here")
    p.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of " + ", ".join(FORMATS))
    p.add_argument("--case-timeout", type=float, default=20.0, help="seconds; a slower case is a hang")
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
    if args.replay:
        return replay_main(args)
    if args.child:
        args.start = [int(s) for s in args.start.split(",")]
        return child_main(args)
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
