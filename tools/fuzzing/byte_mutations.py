"""Byte-level mutations (pure functions of an RNG and bytes: a case is reproducible from its index)."""
from __future__ import annotations

import random
from typing import List

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
