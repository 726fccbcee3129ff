"""``method(inputs, outputs=[...])``: outputs written into arrays the caller provides.

Each array must have exactly its output's dtype and shape, be C-contiguous, aligned and
writeable. For methods whose outputs all have static shapes, the core writes straight into them
(``etnp_method_run_into``: no allocation); otherwise the call's results are copied in (a
dynamic output's array must have the shape that call produced).

No two output arrays may overlap (one array, or views of one buffer, for two outputs: one of them
would be lost): ValueError. An output array that overlaps an input is allowed: that call computes
into fresh arrays and copies them in afterwards, so the inputs are read as they were.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from .errors import ExecutionError


def _check_list(method: Any, outputs: Sequence[Any]) -> List[Any]:
    if not isinstance(outputs, (list, tuple)):
        raise TypeError("outputs= takes a list or tuple of numpy arrays")
    n = len(method.metadata.outputs)
    if len(outputs) != n:
        raise ExecutionError(f"method {method.name!r} has {n} outputs, outputs= gave {len(outputs)} arrays")
    for i, a in enumerate(outputs):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"outputs[{i}] must be a numpy array, not {type(a).__name__}")
        if not a.flags.writeable:
            raise ExecutionError(f"outputs[{i}] is read-only")
    for i in range(1, len(outputs)):
        for j in range(i):
            if _overlap(outputs[i], outputs[j]):
                raise ValueError(f"outputs[{j}] and outputs[{i}] share memory: each output needs its own array")
    return list(outputs)


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    # the bounds test first (cheap); the exact test only where the bounds meet (interleaved views);
    # a case too hard to decide counts as overlapping
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=10**6))
    except Exception:  # numpy's TooHardError
        return True


def aliases_inputs(inputs: Any, outputs: Sequence[np.ndarray]) -> bool:
    """Whether an output array overlaps one of the inputs (arrays in a list, tuple or dict)."""
    values = inputs.values() if isinstance(inputs, dict) else inputs
    if not isinstance(values, (list, tuple)) and not isinstance(inputs, dict):
        return False
    return any(isinstance(x, np.ndarray) and any(_overlap(x, a) for a in outputs) for x in values)


def destinations(method: Any, outputs: Sequence[Any]) -> Optional[List[np.ndarray]]:
    """The arrays the core writes into (bfloat16 as its uint16 bits), checked; None when the
    method has outputs of dynamic shape (the results are then copied in by copy_into)."""
    outputs = _check_list(method, outputs)
    static = method._static_outs
    if static is None:
        return None
    dests = []
    for i, (a, (shape, dt, carrier, _)) in enumerate(zip(outputs, static)):
        if a.dtype != dt:
            raise ExecutionError(f"outputs[{i}]: expected dtype {dt}, got {a.dtype}")
        if a.shape != shape:
            raise ExecutionError(f"outputs[{i}]: expected shape {list(shape)}, got {list(a.shape)}")
        if not (a.flags.c_contiguous and a.flags.aligned):
            raise ExecutionError(f"outputs[{i}] must be C-contiguous and aligned")
        dests.append(a if carrier == dt else a.view(carrier))
    return dests


def copy_into(method: Any, outputs: Sequence[Any], results: Sequence[Any]) -> List[Any]:
    outputs = _check_list(method, outputs)
    for i, (a, r) in enumerate(zip(outputs, results)):
        r = np.asarray(r)
        if a.dtype != r.dtype:
            raise ExecutionError(f"outputs[{i}]: expected dtype {r.dtype}, got {a.dtype}")
        if a.shape != r.shape:
            raise ExecutionError(f"outputs[{i}]: this call's output has shape {list(r.shape)}, "
                                 f"the array {list(a.shape)}")
        np.copyto(a, r)
    return outputs
