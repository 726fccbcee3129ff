"""wcache: packed-weight cache files (native/src/runtime/weight_cache.h) of small XNNPACK programs,
byte-mutated and half of them resealed (hashes recomputed) so that mutations reach the section parser."""
from __future__ import annotations

import os
import random
import struct
import tempfile
from typing import Dict, List, Optional

from .byte_mutations import mutate_bytes
from .target import MODELS, Target, _corpus_seeds


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
