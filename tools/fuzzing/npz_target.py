"""npz: the CLI's inputs reader (``cli.main(["run"|"batch", ...])`` in-process), on byte-mutated and
structure-mutated archives (.npy headers, keys, zip fields)."""
from __future__ import annotations

import contextlib
import io
import os
import random
import struct
import warnings
import zipfile
from typing import List, Optional

from .byte_mutations import _get, _put, mutate_bytes
from .target import MODELS, Target, _read, _corpus_seeds


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
