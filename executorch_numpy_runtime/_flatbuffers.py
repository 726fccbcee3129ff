"""A small flatbuffer writer and reader (no flatbuffers dependency): what the ETDump files need.

Writing: describe the objects as ``Table({slot: (kind, value)})``, where kind is a ``struct``
format letter for a scalar (``"b"``, ``"i"``, ``"q"``, ``"Q"``, ``"f"``, ``"d"``, ``"?"``...),
``"str"``, ``"table"``, ``"tables"`` (a vector of tables), ``"bytes"`` (a ubyte vector) or
``"[q"`` (a vector of the scalar "q"); then ``finish(root, identifier, size_prefixed)``.
The layout is written front to back: each table's vtable just before it, each object's children
after it (flatbuffer offsets point forward; a table's signed offset to its vtable backwards), every
scalar aligned to its size from the start of the buffer (its size prefix included).

Reading: ``Reader(data, size_prefixed)`` with ``root()``, ``scalar``, ``string``, ``table``,
``tables``, ``vector`` (bounds-checked).
"""
from __future__ import annotations

import struct
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Tuple


class Table:
    """A table to write: slot (the field's index in the schema) -> (kind, value); absent slots
    (or a value of None) are not written, so the reader sees the schema's default."""

    __slots__ = ("fields",)

    def __init__(self, fields: Dict[int, Tuple[str, Any]]) -> None:
        self.fields = {k: v for k, v in fields.items() if v[1] is not None}


_REF_KINDS = ("str", "table", "tables", "bytes")


def _size(kind: str) -> int:
    return 4 if kind in _REF_KINDS or kind.startswith("[") else struct.calcsize("<" + kind)


class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray()
        self.todo: Deque[Tuple[int, str, Any]] = deque()  # (where its offset goes, kind, value)

    def pad(self, align: int, extra: int = 0) -> None:
        """Pads until (len + extra) is a multiple of align."""
        self.buf.extend(b"\0" * (-(len(self.buf) + extra) % align))

    def ref(self, kind: str, value: Any) -> None:
        self.todo.append((len(self.buf), kind, value))
        self.buf.extend(b"\0\0\0\0")

    def table(self, t: Table) -> int:
        slots = sorted(t.fields.items(), key=lambda kv: (-_size(kv[1][0]), kv[0]))
        nslots = max(t.fields) + 1 if t.fields else 0
        self.pad(2)
        vt = len(self.buf)
        self.buf.extend(b"\0" * (4 + 2 * nslots))
        self.pad(max([4] + [_size(k) for _, (k, _) in slots]))
        pos = len(self.buf)
        self.buf.extend(struct.pack("<i", pos - vt))
        offsets = [0] * nslots
        for slot, (kind, value) in slots:
            size = _size(kind)
            self.pad(size)
            offsets[slot] = len(self.buf) - pos
            if kind in _REF_KINDS or kind.startswith("["):
                self.ref(kind, value)
            else:
                self.buf.extend(struct.pack("<" + kind, value))
        struct.pack_into("<HH", self.buf, vt, 4 + 2 * nslots, len(self.buf) - pos)
        struct.pack_into(f"<{nslots}H", self.buf, vt + 4, *offsets)
        return pos

    def obj(self, kind: str, value: Any) -> int:
        if kind == "table":
            return self.table(value)
        if kind == "str":
            data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            self.pad(4)
            pos = len(self.buf)
            self.buf.extend(struct.pack("<I", len(data)) + data + b"\0")
            return pos
        if kind == "tables":
            self.pad(4)
            pos = len(self.buf)
            self.buf.extend(struct.pack("<I", len(value)))
            for t in value:
                self.ref("table", t)
            return pos
        fmt = "B" if kind == "bytes" else kind[1:]
        data = bytes(value) if kind == "bytes" else struct.pack(f"<{len(value)}{fmt}", *value)
        self.pad(max(4, struct.calcsize("<" + fmt)), 4)
        pos = len(self.buf)
        self.buf.extend(struct.pack("<I", len(value)) + data)
        return pos

    def run(self) -> None:
        while self.todo:  # breadth first: every child after the offset that points to it
            at, kind, value = self.todo.popleft()
            pos = self.obj(kind, value)
            struct.pack_into("<I", self.buf, at, pos - at)


def finish(root: Table, identifier: bytes = b"", size_prefixed: bool = False) -> bytes:
    """The flatbuffer of ROOT: [uint32 size of the rest, when size-prefixed] [uint32 offset of
    the root table] [4-byte file identifier, when given] then the objects."""
    w = _Writer()
    base = 4 if size_prefixed else 0
    w.buf.extend(b"\0" * (base + 4))
    if identifier:
        if len(identifier) != 4:
            raise ValueError("a file identifier has 4 bytes")
        w.buf.extend(identifier)
    w.todo.append((base, "table", root))
    w.run()
    w.pad(8)
    if size_prefixed:
        struct.pack_into("<I", w.buf, 0, len(w.buf) - 4)
    return bytes(w.buf)


class FlatbufferError(ValueError):
    pass


class Reader:
    """Bounds-checked access to a flatbuffer's tables (positions are absolute in DATA)."""

    def __init__(self, data: Any, size_prefixed: bool = False) -> None:
        self.b = memoryview(data).cast("B")
        self.n = len(self.b)
        self.base = 0
        if size_prefixed:
            size = self.fmt("I", 0)
            if size + 4 > self.n:
                raise FlatbufferError(f"size prefix {size} exceeds the {self.n - 4} bytes that follow")
            self.base = 4

    def identifier(self) -> bytes:
        self._need(self.base + 4, 4)
        return bytes(self.b[self.base + 4:self.base + 8])

    def root(self) -> int:
        return self.ref(self.base)

    def _need(self, pos: int, size: int) -> None:
        if pos < 0 or pos + size > self.n:
            raise FlatbufferError("offset outside the buffer (truncated or corrupt)")

    def fmt(self, f: str, pos: int) -> Any:
        self._need(pos, struct.calcsize("<" + f))
        return struct.unpack_from("<" + f, self.b, pos)[0]

    def ref(self, pos: int) -> int:
        return pos + self.fmt("I", pos)

    def field(self, table: int, slot: int) -> int:
        """The position of a table's field, 0 when absent."""
        vt = table - self.fmt("i", table)
        if 4 + 2 * slot + 2 > self.fmt("H", vt):
            return 0
        off = self.fmt("H", vt + 4 + 2 * slot)
        return table + off if off else 0

    def scalar(self, table: int, slot: int, f: str, default: Any = 0) -> Any:
        pos = self.field(table, slot)
        return self.fmt(f, pos) if pos else default

    def table(self, table: int, slot: int) -> Optional[int]:
        pos = self.field(table, slot)
        return self.ref(pos) if pos else None

    def u32(self, pos: int) -> int:
        return self.fmt("I", pos)

    def positions(self, table: int, slot: int) -> Tuple[int, int]:
        """(position of the first element, length) of a vector field; (0, 0) when absent."""
        pos = self.field(table, slot)
        if not pos:
            return 0, 0
        v = self.ref(pos)
        return v + 4, self.fmt("I", v)

    def tables(self, table: int, slot: int) -> List[int]:
        start, n = self.positions(table, slot)
        self._need(start, 4 * n)
        return [self.ref(start + 4 * k) for k in range(n)]

    def vector(self, table: int, slot: int, f: str) -> List[Any]:
        start, n = self.positions(table, slot)
        size = struct.calcsize("<" + f)
        self._need(start, size * n)
        return list(struct.unpack_from(f"<{n}{f}", self.b, start)) if n else []

    def string(self, table: int, slot: int) -> Optional[str]:
        if not self.field(table, slot):
            return None
        start, n = self.positions(table, slot)
        self._need(start, n)
        return bytes(self.b[start:start + n]).decode("utf-8", "replace")
