"""Bundled programs (.bpte): a program with test cases, as ExecuTorch's devtools write them.

The file is a flatbuffer with identifier ``BP08`` (``executorch/devtools/bundled_program/schema/
bundled_program_schema.fbs``): ``BundledProgram{version, method_test_suites, program}``, each suite
``{method_name, test_cases: [{inputs, expected_outputs}]}``, each value a union of Tensor
(``scalar_type, sizes, data, dim_order``), Int, Bool or Double. This module reads it (bounds-checked,
no flatbuffers dependency): ``load_program`` loads the inner program, ``verify`` runs the cases.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

import numpy as np

from . import dtypes
from ._flatbuffers import Reader
from .errors import ExecuTorchError, ProgramLoadError
from .files import read_regular_file

IDENTIFIER = b"BP08"
# A bundled program is one flatbuffer: its 32-bit offsets address no more than 4 GiB.
MAX_FILE_BYTES = 1 << 32


def is_bundled(head: bytes) -> bool:
    """Whether the first 8 bytes of a file are a bundled program's."""
    return len(head) >= 8 and bytes(head[4:8]) == IDENTIFIER


class _Reader(Reader):
    """_flatbuffers.Reader for untrusted .bpte files: every bad offset a ProgramLoadError, absent
    strings "", and tables the file may reference once only."""

    def __init__(self, data) -> None:
        super().__init__(data)
        self.seen: set = set()

    def once(self, pos: int) -> int:
        """POS, a table or data vector the file must reference only once: flatbuffers may share
        them, ExecuTorch's serializer (flatc from JSON) never does, and a shared one would let a
        few bytes stand for millions of values (n**3 from three vectors of n references)."""
        if pos in self.seen:
            raise ProgramLoadError("bundled program: a table is referenced more than once (corrupt)")
        self.seen.add(pos)
        return pos

    def _need(self, pos: int, size: int) -> None:
        if pos < 0 or pos + size > self.n:
            raise ProgramLoadError("bundled program: offset outside the file (truncated or corrupt)")

    def string(self, table: int, i: int) -> str:
        s = super().string(table, i)
        return "" if s is None else s


@dataclass
class TestCase:
    inputs: List[Any]
    expected_outputs: List[Any]


@dataclass
class TestSuite:
    method_name: str
    test_cases: List[TestCase]


@dataclass
class BundledProgram:
    version: int
    program: memoryview  # the inner .pte's bytes (a view into the bundled file's data)
    suites: List[TestSuite]


def _value(r: _Reader, table: int) -> Any:
    r.once(table)
    kind = r.scalar(table, 0, "B")
    val = r.table(table, 1)
    if val is None:
        raise ProgramLoadError("bundled program: a value without data")
    r.once(val)
    if kind == 1:  # Tensor
        code = r.scalar(val, 0, "b")
        start, n = r.positions(val, 1)
        r._need(start, 4 * n)
        sizes = [r.fmt("i", start + 4 * k) for k in range(n)]
        dstart, dn = r.positions(val, 2)
        if dn:
            r.once(dstart)
        r._need(dstart, dn)
        ostart, on = r.positions(val, 3)
        r._need(ostart, on)
        order = list(r.b[ostart:ostart + on]) or list(range(len(sizes)))
        if code not in dtypes._CODE_TO_NP:
            raise ProgramLoadError(f"bundled program: tensor of unsupported dtype {dtypes.dtype_name(code)}")
        dt = dtypes.to_numpy(code)
        if sorted(order) != list(range(len(sizes))) or any(s < 0 for s in sizes):
            raise ProgramLoadError("bundled program: bad tensor sizes or dim order")
        count = int(np.prod(sizes, dtype=np.int64))
        if count * dt.itemsize != dn:
            raise ProgramLoadError(f"bundled program: tensor of sizes {sizes} has {dn} bytes of data")
        raw = np.frombuffer(bytes(r.b[dstart:dstart + dn]), dtype=dtypes._CODE_TO_NP[code])
        arr = raw.reshape([sizes[d] for d in order]).transpose(np.argsort(order))
        arr = np.ascontiguousarray(arr)
        return arr.view(dt) if dt != arr.dtype else arr
    if kind == 2:
        return r.scalar(val, 0, "q")
    if kind == 3:
        return bool(r.scalar(val, 0, "B"))
    if kind == 4:
        return r.scalar(val, 0, "d", 0.0)
    raise ProgramLoadError(f"bundled program: value of unknown kind {kind}")


def parse(data) -> BundledProgram:
    """Reads a bundled program (raises ProgramLoadError when it is not one or is malformed)."""
    r = _Reader(data)
    if r.n < 8 or not is_bundled(r.b[:8]):
        raise ProgramLoadError(f"not a bundled program (identifier {bytes(r.b[4:8])!r}, expected {IDENTIFIER!r})")
    root = r.u32(0)
    try:
        version = r.scalar(root, 0, "I")
        start, n = r.positions(root, 2)
        r._need(start, n)
        if n == 0:
            raise ProgramLoadError("bundled program: it holds no program")
        suites = []
        for s in r.tables(root, 1):
            cases = [TestCase([_value(r, v) for v in r.tables(r.once(c), 0)], [_value(r, v) for v in r.tables(c, 1)])
                     for c in r.tables(r.once(s), 1)]
            suites.append(TestSuite(r.string(s, 0), cases))
    except (struct.error, ValueError, OverflowError) as e:
        raise ProgramLoadError(f"bundled program: malformed ({e})") from None
    return BundledProgram(version, r.b[start:start + n], suites)


@dataclass
class CaseResult:
    method: str
    index: int
    passed: bool
    max_abs_error: float
    message: str = ""


def _compare(got: Sequence[Any], want: Sequence[Any], rtol: float, atol: float) -> Tuple[bool, float, str]:
    if len(got) != len(want):
        return False, float("inf"), f"{len(got)} outputs, {len(want)} expected"
    ok, worst = True, 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return False, float("inf"), f"output {i}: shape {list(g.shape)}, expected {list(w.shape)}"
        if g.size == 0:
            continue
        g64 = g.astype(np.float64) if g.dtype.kind != "c" else g.astype(np.complex128)
        w64 = w.astype(np.float64) if w.dtype.kind != "c" else w.astype(np.complex128)
        err = float(np.max(np.abs(g64 - w64)))
        worst = max(worst, err)
        ok = ok and bool(np.allclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True))
    return ok, worst, ""


def verify(runtime, source, rtol: float = 1e-5, atol: float = 1e-6) -> List[CaseResult]:
    """Runs every test case of a bundled program (path or bytes) on ``runtime``: one CaseResult
    each (``passed`` = outputs allclose to the expected ones within rtol/atol)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = source
    else:  # regular files only, read no further than their size (FileError, an OSError, if not)
        data = read_regular_file(source, "bundled program", MAX_FILE_BYTES)
    bp = parse(data)
    prog = runtime.load_program(bp.program)
    results = []
    for suite in bp.suites:
        try:
            method = prog.load_method(suite.method_name)
        except ExecuTorchError as e:
            results += [CaseResult(suite.method_name, k, False, float("inf"), str(e)) for k in range(len(suite.test_cases))]
            continue
        for k, case in enumerate(suite.test_cases):
            try:
                method.reset() if method.metadata.state else None
                got = method(list(case.inputs))
            except ExecuTorchError as e:
                results.append(CaseResult(suite.method_name, k, False, float("inf"), str(e)))
                continue
            ok, err, msg = _compare(got, case.expected_outputs, rtol, atol)
            results.append(CaseResult(suite.method_name, k, ok, err, msg))
    return results
