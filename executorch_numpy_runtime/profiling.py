"""``method.profile(inputs)``: where a call's time goes.

A profiled call records one event per kernel or delegate instruction (depth 0) and, inside
XNNPACK delegate calls, one per node (depth 1: its name says what was fused into it, e.g.
``XNNConv2d+DepthwiseConv2d+Conv2d+Add``, and ``shape`` is its output's). Profiling is switched on
for the profiled calls only; otherwise it costs the interpreter one pointer test per instruction.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

from ._native import check, ffi, lib


@dataclass(frozen=True)
class ProfileEvent:
    name: str
    start_us: float      # from the start of the call
    duration_us: float
    instruction: int
    depth: int           # 0: instruction, 1: XNNPACK node inside a delegate call
    node: int            # the node's index in its delegate, -1 for instructions
    shape: str = ""      # a node's output shape ("1x112x112x32")
    chain: int = 0       # the program's chain of the instruction
    chain_instruction: int = -1  # its index in the chain (ExecuTorch's instruction id)


@dataclass(frozen=True)
class DebugValue:
    """An instruction's output captured during a profiled call (``intermediate_outputs=``)."""
    instruction: int
    item: int            # the tensor's index in a list output, or a delegate call's argument index
    value: Any           # numpy array, int, float, bool, or None
    dtype: int = -1      # a tensor's ScalarType code


def _read_events(ptr) -> List[ProfileEvent]:
    e = ffi.new("etnp_profile_event *")
    out = []
    for i in range(lib.etnp_method_num_profile_events(ptr)):
        check(lib.etnp_method_profile_event(ptr, i, e), "reading the profile")
        out.append(ProfileEvent(ffi.string(e.name).decode("utf-8", "replace"), e.start_ns / 1e3, e.duration_ns / 1e3,
                                int(e.instruction), int(e.depth), int(e.node),
                                ffi.string(e.shape).decode("utf-8", "replace"), int(e.chain),
                                int(e.chain_instruction)))
    return out


def _read_debug_values(ptr) -> List[DebugValue]:
    import numpy as np

    from . import dtypes

    d = ffi.new("etnp_debug_value *")
    out = []
    for i in range(lib.etnp_method_num_debug_values(ptr)):
        check(lib.etnp_method_debug_value(ptr, i, d, ffi.NULL, 0), "reading an intermediate output")
        value: Any = None
        code = -1
        if d.kind == lib.ETNP_KIND_TENSOR:
            code = int(d.dtype)
            value = np.empty(tuple(d.sizes[k] for k in range(d.ndim)), dtypes.to_numpy(code))
            if value.nbytes:
                check(lib.etnp_method_debug_value(ptr, i, d, ffi.from_buffer(value), value.nbytes),
                      "reading an intermediate output")
        elif d.kind == lib.ETNP_KIND_INT:
            value = int(d.int_value)
        elif d.kind == lib.ETNP_KIND_BOOL:
            value = bool(d.int_value)
        elif d.kind == lib.ETNP_KIND_DOUBLE:
            value = float(d.double_value)
        out.append(DebugValue(int(d.instruction), int(d.item), value, code))
    return out


class Profile:
    """The events of profiled calls of one method: ``events`` (the last call's), ``calls`` (every
    profiled call's), ``outputs`` (the last call's), ``wall_us`` (mean wall time of a call)."""

    def __init__(self, method: str, calls: List[List[ProfileEvent]], outputs: List[Any], wall_us: float,
                 debug_calls: "List[List[DebugValue]] | None" = None) -> None:
        self.method = method
        self.debug_calls = debug_calls or []  # per call: its captured intermediate outputs
        self.debug_values = self.debug_calls[-1] if self.debug_calls else []
        self.calls = calls
        self.events = calls[-1] if calls else []
        self.outputs = outputs
        self.wall_us = wall_us

    @staticmethod
    def _leaves(events: Sequence[ProfileEvent]) -> List[Tuple[str, float]]:
        """(name, microseconds) of the work items: kernels, delegate nodes, and each delegate
        call's time outside its nodes (``<delegate> (outside nodes)``: moving inputs/outputs)."""
        inside: Dict[int, float] = {}
        for e in events:
            if e.depth == 1:
                inside[e.instruction] = inside.get(e.instruction, 0.0) + e.duration_us
        out = []
        for e in events:
            if e.depth == 1:
                out.append((e.name, e.duration_us))
            elif e.instruction in inside:
                out.append((f"{e.name} (outside nodes)", max(e.duration_us - inside[e.instruction], 0.0)))
            else:
                out.append((e.name, e.duration_us))
        return out

    def operators(self) -> List[Tuple[str, int, float]]:
        """(operator or node name, count per call, mean microseconds per call), slowest first."""
        totals: Dict[str, List[float]] = {}
        for events in self.calls:
            for name, us in self._leaves(events):
                t = totals.setdefault(name, [0, 0.0])
                t[0] += 1
                t[1] += us
        n = max(len(self.calls), 1)
        rows = [(name, int(c) // n, us / n) for name, (c, us) in totals.items()]
        return sorted(rows, key=lambda r: -r[2])

    @property
    def total_us(self) -> float:
        """Mean time per call of the instructions (depth-0 events)."""
        n = max(len(self.calls), 1)
        return sum(e.duration_us for events in self.calls for e in events if e.depth == 0) / n

    def table(self, top: int = 10) -> str:
        rows = self.operators()
        total = sum(r[2] for r in rows) or 1.0
        lines = [f"{self.method}: {self.total_us / 1e3:.3f} ms in instructions per call "
                 f"({len(self.calls)} call(s) profiled), top {min(top, len(rows))} of {len(rows)}:",
                 f"  {'operator':<44} {'count':>5} {'ms/call':>9} {'share':>6}"]
        for name, count, us in rows[:top]:
            lines.append(f"  {name[:44]:<44} {count:>5} {us / 1e3:>9.3f} {100 * us / total:>5.1f}%")
        return "\n".join(lines)

    def to_chrome_trace(self, path: "str | os.PathLike[str]") -> None:
        """Writes the profiled calls as a Chrome trace (chrome://tracing, ui.perfetto.dev): one
        complete event per instruction, with its XNNPACK nodes nested inside it; calls follow
        one another on the time axis."""
        trace: List[Dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "executorch-numpy-runtime"}},
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": self.method}}]
        offset = 0.0
        for k, events in enumerate(self.calls):
            end = 0.0
            for e in events:
                args: Dict[str, Any] = {"instruction": e.instruction, "call": k}
                if e.depth:
                    args["node"] = e.node
                if e.shape:
                    args["shape"] = e.shape
                trace.append({"name": e.name, "cat": "xnnpack_node" if e.depth else "instruction", "ph": "X",
                              "ts": round(offset + e.start_us, 3), "dur": round(e.duration_us, 3),
                              "pid": 1, "tid": 1, "args": args})
                end = max(end, e.start_us + e.duration_us)
            offset += end + 1.0
        with open(path, "w") as fh:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, fh)

    def to_etdump(self, path: "str | os.PathLike[str]",
                  debug_buffer_path: "str | os.PathLike[str] | None" = None) -> None:
        """Writes the profiled calls as an ETDump (``.etdp``) that ExecuTorch's
        ``executorch.devtools.Inspector(etdump_path=..., etrecord=..., debug_buffer_path=...)``
        reads: one run per call, operator and delegate (XNNPACK node) events with the program's
        instruction ids. With ``debug_buffer_path``, the captured intermediate outputs
        (``profile(intermediate_outputs=...)``) and the last call's outputs go there as debug events."""
        from . import etdump

        etdump.write(etdump.calls_of(self), path, debug_buffer_path)

    def __repr__(self) -> str:
        return f"Profile({self.method!r}, {len(self.events)} events, {self.total_us:.1f} us)"


def _capture_args(intermediate_outputs: Any) -> Tuple[int, List[int]]:
    """(mode, instructions) for etnp_method_set_debug_capture."""
    if intermediate_outputs is None or intermediate_outputs is False:
        return 0, []
    if intermediate_outputs is True or intermediate_outputs == "all":
        return 1, []
    try:
        ids = [int(i) for i in intermediate_outputs]
    except (TypeError, ValueError):
        raise TypeError("intermediate_outputs must be True, 'all', or instruction indices") from None
    if any(isinstance(i, bool) for i in intermediate_outputs):
        raise TypeError("intermediate_outputs must be True, 'all', or instruction indices")
    return 2, ids


def profile_method(method: Any, inputs: Any, feeds: Dict[str, Any], repeat: int,
                   intermediate_outputs: Any = None) -> Profile:
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError("repeat must be a positive int")
    mode, ids = _capture_args(intermediate_outputs)
    calls, debug_calls, outs, wall = [], [], [], 0.0
    from .runtime_lock import _holding

    check(lib.etnp_method_set_profiling(method._ptr, 1), "turning profiling on")
    try:
        if mode:
            arr = ffi.new("int32_t[]", ids) if ids else ffi.NULL
            check(lib.etnp_method_set_debug_capture(method._ptr, mode, arr, len(ids)), "choosing intermediate outputs")
        for _ in range(repeat):
            t = time.perf_counter()
            outs = method(inputs, **feeds)
            wall += time.perf_counter() - t
            with _holding(method._lock, "profile a method"):  # no other call of it meanwhile
                calls.append(_read_events(method._ptr))
                if mode:
                    debug_calls.append(_read_debug_values(method._ptr))
    finally:
        lib.etnp_method_set_profiling(method._ptr, 0)
    return Profile(method.name, calls, outs, wall / repeat * 1e6, debug_calls)
