"""A minimal .pte writer for tests that need hand-made programs (loops, invalid plans, one op).

Writes the flatbuffer front to back (children after their parent, so every offset points
forward), per executorch/schema/program.fbs (ExecuTorch 1.3.1). No torch, no flatbuffers package.
"""
import struct

# scalar_type codes (scalar_type.fbs)
U8, I8, I32, I64, F32, F64, BOOL = 0, 1, 3, 4, 6, 7, 11
_FMT = {"u8": "<B", "i8": "<b", "u16": "<H", "i32": "<i", "u32": "<I", "i64": "<q", "u64": "<Q", "f64": "<d"}


class T:
    """A table: {field id: value}. Values: ("i32", 5), T(...), ("str", s), ("vec", fmt, [..]),
    ("vect", [T...]) (vector of tables), ("bytes", b"...") (16-aligned ubyte vector)."""

    def __init__(self, **fields):
        self.fields = {int(k[1:]): v for k, v in fields.items()}  # f0=..., f1=...


class _Writer:
    def __init__(self, reserve):
        self.buf = bytearray(reserve)

    def align(self, n, extra=0):
        while (len(self.buf) + extra) % n:
            self.buf.append(0)

    def patch(self, at, target):
        struct.pack_into("<I", self.buf, at, target - at)

    def table(self, t):
        items = sorted(t.fields.items())
        nf = (items[-1][0] + 1) if items else 0
        layout, off = [], 4
        for fid, v in items:  # inline size of each field
            size = struct.calcsize(_FMT[v[0]]) if isinstance(v, tuple) and v[0] in _FMT else 4
            while off % size:
                off += 1
            layout.append((fid, v, off, size))
            off += size
        tsize = off
        self.align(2)
        vt = len(self.buf)
        offs = [0] * nf
        for fid, v, o, s in layout:
            offs[fid] = o
        self.buf += struct.pack("<HH", 4 + 2 * nf, tsize) + b"".join(struct.pack("<H", o) for o in offs)
        self.align(8)
        pos = len(self.buf)
        self.buf += struct.pack("<i", pos - vt) + bytes(tsize - 4)
        later = []
        for fid, v, o, s in layout:
            if isinstance(v, tuple) and v[0] in _FMT:
                struct.pack_into(_FMT[v[0]], self.buf, pos + o, v[1])
            else:
                later.append((pos + o, v))
        for at, v in later:
            self.patch(at, self.value(v))
        return pos

    def value(self, v):
        if isinstance(v, T):
            return self.table(v)
        kind = v[0]
        if kind == "str":
            self.align(4)
            pos = len(self.buf)
            b = v[1].encode()
            self.buf += struct.pack("<I", len(b)) + b + b"\0"
            return pos
        if kind == "bytes":
            self.align(16, 4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(v[1])) + bytes(v[1])
            return pos
        if kind == "vec":
            fmt, xs = _FMT[v[1]], v[2]
            size = struct.calcsize(fmt)
            self.align(max(size, 4), 4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(xs)) + b"".join(struct.pack(fmt, x) for x in xs)
            return pos
        if kind in ("vect", "vecs"):
            self.align(4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(v[1])) + bytes(4 * len(v[1]))
            for i, item in enumerate(v[1]):
                self.patch(pos + 4 + 4 * i, self.value(item if kind == "vect" else ("str", item)))
            return pos
        raise ValueError(kind)


class Program:
    """One method ('forward') built value by value. Values are indices into the value table."""

    def __init__(self):
        self.values, self.ops, self.instructions = [], [], []
        self.buffers = [0]          # non_const_buffer_sizes ([0] reserved)
        self.constants = [b""]      # inline constant_buffer ([0] reserved)
        self.mutable = None         # bytes of the mutable data segment
        self.mutable_offsets = [0]
        self.inputs, self.outputs = [], []

    def _add(self, kind, payload):
        self.values.append(T(f0=("u8", kind), f1=payload))
        return len(self.values) - 1

    def none(self):
        self.values.append(T(f0=("u8", 1), f1=T()))
        return len(self.values) - 1

    def int(self, v):
        return self._add(2, T(f0=("i64", v)))

    def double(self, v):
        return self._add(4, T(f0=("f64", v)))

    def bool(self, v):
        return self._add(3, T(f0=("u8", 1 if v else 0)))

    def int_list(self, xs):
        items = [self.int(x) for x in xs]
        return self._add(7, T(f0=("vec", "i64", items)))

    def tensor(self, dtype, sizes, planned=False, const=None, mutable=None, storage_offset=0, buffer_idx=None):
        """planned: bytes in a planned buffer of its own; const: bytes (inline constant);
        mutable: initial bytes in the mutable data segment (planned too); buffer_idx: raw override."""
        f = dict(f0=("i8", dtype), f2=("vec", "i32", list(sizes)), f3=("vec", "u8", list(range(len(sizes)))))
        if storage_offset:
            f["f1"] = ("i32", storage_offset)
        nbytes = {U8: 1, I8: 1, BOOL: 1, I32: 4, F32: 4, I64: 8, F64: 8}[dtype]
        for s in sizes:
            nbytes *= s
        if const is not None:
            self.constants.append(bytes(const))
            f["f5"] = ("u32", len(self.constants) - 1)
        if mutable is not None:
            self.mutable = (self.mutable or b"") + bytes(mutable)
            self.mutable_offsets.append(len(self.mutable) - len(mutable))
            f["f5"] = ("u32", len(self.mutable_offsets) - 1)
        if buffer_idx is not None:
            f["f5"] = ("u32", buffer_idx)
        if planned or mutable is not None:
            self.buffers.append(max(nbytes, 1))
            f["f6"] = T(f0=("u32", len(self.buffers) - 1), f1=("u32", 0), f2=("u32", 0))
        return self._add(5, T(**f))

    def op(self, name, overload):
        self.ops.append(T(f0=("str", name), f1=("str", overload)))
        return len(self.ops) - 1

    def call(self, op_index, args):
        self.instructions.append(T(f0=("u8", 1), f1=T(f0=("i32", op_index), f1=("vec", "i32", list(args)))))

    def jump_false(self, cond, dest):
        self.instructions.append(T(f0=("u8", 4), f1=T(f0=("i32", cond), f1=("i32", dest))))

    def move(self, src, dst):
        self.instructions.append(T(f0=("u8", 3), f1=T(f0=("i32", src), f1=("i32", dst))))

    def to_bytes(self):
        plan = T(f0=("str", "forward"), f2=("vect", self.values), f3=("vec", "i32", self.inputs),
                 f4=("vec", "i32", self.outputs), f5=("vect", [T(f2=("vect", self.instructions))]),
                 f6=("vect", self.ops), f8=("vec", "i64", self.buffers))
        prog = dict(f0=("u32", 0), f1=("vect", [plan]), f2=("vect", [T(f0=("bytes", c)) for c in self.constants]))
        if self.mutable is not None:
            prog["f4"] = ("vect", [T(f0=("u64", 0), f1=("u64", len(self.mutable)))])
            prog["f6"] = ("vect", [T(f0=("u32", 0), f1=("vec", "u64", self.mutable_offsets))])
        w = _Writer(40)  # root offset, identifier, extended header
        root = w.table(T(**prog))
        w.align(16)
        program_size = len(w.buf)
        struct.pack_into("<I", w.buf, 0, root)
        w.buf[4:8] = b"ET12"
        seg = self.mutable or b""
        w.buf[8:12] = b"eh00"
        struct.pack_into("<IQQQ", w.buf, 12, 32, program_size, program_size, len(seg))
        return bytes(w.buf) + seg
