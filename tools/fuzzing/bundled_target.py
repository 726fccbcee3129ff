"""bpte: bundled programs (``bundled.parse``, ``Runtime.load_program`` from bytes and from a path,
``bundled.verify``), with a mutator aware of the test cases' fields."""
from __future__ import annotations

import os
import random
from typing import List, Tuple

from .byte_mutations import _INT32, _INT64, _put, mutate_bytes
from .target import Target, _read, _corpus_seeds


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
