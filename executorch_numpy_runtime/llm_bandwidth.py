"""How close an LLM's decode runs to the memory-bandwidth limit (issue #29).

A decode step streams the model's weights once (one token's activations are small next to them), so
``weight bytes x decode tokens/s`` is the bandwidth a run achieves; against what this machine reads
per second (a numpy pass over a buffer larger than the caches) it is the fraction of the limit.
The weight bytes are what the method holds for its kernels: packed weights (those mapped from a
weight cache included) and decoded constants - a lower bound on what a step reads (the KV cache
read by attention and the embedding row come on top).
"""
from __future__ import annotations

import time
from typing import Any, Dict

import numpy as np

_WEIGHT_KEYS = ("packed_weights", "mapped_weights", "constants")


def weight_bytes(memory_stats: Dict[str, int]) -> int:
    """The bytes of weights a decode step streams, from ``Method.memory_stats()``."""
    return int(sum(int(memory_stats.get(k, 0)) for k in _WEIGHT_KEYS))


def read_bandwidth(nbytes: int = 256 << 20, repeats: int = 3) -> float:
    """Bytes per second this process reads from memory: the best of `repeats` numpy OR-reductions
    over a buffer of `nbytes` (well past the caches; one integer OR an element keeps it bound by
    memory, not arithmetic). A shared, loaded machine measures less than it has."""
    if nbytes < 8 or repeats < 1:
        raise ValueError("read_bandwidth needs at least 8 bytes and one repeat")
    a = np.ones(nbytes // 8, dtype=np.int64)  # written once: its pages exist before the timing
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        np.bitwise_or.reduce(a)
        best = min(best, time.perf_counter() - t)
    return a.nbytes / best if best > 0 else float("inf")


def decode_report(memory_stats: Dict[str, int], decode_tokens_per_s: float, bandwidth: float) -> Dict[str, Any]:
    """bytes_per_token, achieved bytes/s, measured bytes/s and their ratio (0 when not measurable)."""
    per_token = weight_bytes(memory_stats)
    achieved = per_token * max(decode_tokens_per_s, 0.0)
    return {"weight_bytes_per_token": per_token, "achieved_bytes_per_s": achieved,
            "measured_bytes_per_s": bandwidth,
            "fraction_of_bandwidth": achieved / bandwidth if bandwidth > 0 else 0.0}
