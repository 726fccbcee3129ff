"""ETDump files (``.etdp``) that ExecuTorch's devtools read (``executorch.devtools.Inspector``).

The format is ExecuTorch 1.3.1's ``devtools/etdump/etdump_schema_flatcc.fbs``: a size-prefixed
flatbuffer, identifier ``ED00``, ``ETDump{version, run_data: [RunData{name, bundled_input_index,
events: [Event{profile_event | debug_event}]}]}``. Each profiled call is one run, written as an
ExecuTorch runtime with its event tracer on writes one:

* per kernel instruction, ``native_call_<op>`` (the kernel's own event) and ``OPERATOR_CALL`` (the
  interpreter's), with ``chain_index`` and ``instruction_id`` - the instruction's index in its chain,
  which an ETRecord's debug handle map is keyed by, so the Inspector maps events to source nodes;
* per delegate instruction, ``DELEGATE_CALL`` and, inside it, one event per XNNPACK node with
  ``delegate_debug_id_str`` ``"<node> #<k>"`` (the k-th node of that name in the call), as
  ExecuTorch's XNNPACK profiler names them;
* ``Method::execute`` for the call (chain -1, instruction 0: the event tracer's unset values);
* with a debug buffer, a debug event per captured value (as ExecuTorch logs them: each output of
  a kernel call, each argument of a delegate call; see ``Method.profile(intermediate_outputs=...)``)
  and per method output (``output`` true), their tensors' bytes in the debug buffer file at 64-byte
  aligned offsets.

Times are nanoseconds (the Inspector's default source time scale), each call after the last.
``read_etdump`` parses such a file back (tests, tools).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._flatbuffers import Reader, Table, finish

IDENTIFIER = b"ED00"
VERSION = 0
RUN_NAME = "Execute"
UNSET_CHAIN_ULONG = (1 << 64) - 1  # the event tracer's unset chain (-1) in DebugEvent's ulong
_ALIGN = 64

# ValueType (etdump_schema_flatcc.fbs)
V_NULL, V_INT, V_BOOL, V_FLOAT, V_DOUBLE, V_TENSOR, V_TENSOR_LIST, V_STRING = range(8)
_VALUE_NAMES = ["Null", "Int", "Bool", "Float", "Double", "Tensor", "TensorList", "String"]


def op_event_name(op: str) -> str:
    """The kernel event's name for an operator: ExecuTorch's generated kernel wrappers log
    ``native_call_<name>`` (``aten::add.out`` -> ``native_call_add.out``)."""
    return "native_call_" + op.split("::", 1)[-1]


class _DebugBuffer:
    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, arr: np.ndarray) -> int:
        self.data.extend(b"\0" * (-len(self.data) % _ALIGN))
        offset = len(self.data)
        self.data.extend(np.ascontiguousarray(arr).tobytes())
        return offset


def _tensor(arr: np.ndarray, dtype: int, buf: _DebugBuffer) -> Table:
    sizes = [int(s) for s in arr.shape]
    strides, acc = [], 1
    for s in reversed(sizes):
        strides.insert(0, acc)
        acc *= max(s, 1)
    return Table({0: ("b", dtype), 1: ("[q", sizes), 2: ("[q", strides), 3: ("q", buf.add(arr))})


def _value(v: Any, dtype: int, buf: _DebugBuffer, output: bool = False) -> Table:
    fields: Dict[int, Tuple[str, Any]] = {}
    if isinstance(v, np.ndarray):
        fields = {0: ("b", V_TENSOR), 1: ("table", _tensor(v, dtype, buf))}
    elif isinstance(v, (list, tuple)):
        fields = {0: ("b", V_TENSOR_LIST),
                  2: ("table", Table({0: ("tables", [_tensor(a, d, buf) for a, d in v
                                                     if isinstance(a, np.ndarray)])}))}
    elif isinstance(v, (bool, np.bool_)):
        fields = {0: ("b", V_BOOL), 6: ("table", Table({0: ("?", bool(v))}))}
    elif isinstance(v, (int, np.integer)):
        fields = {0: ("b", V_INT), 3: ("table", Table({0: ("q", int(v))}))}
    elif isinstance(v, (float, np.floating)):
        fields = {0: ("b", V_DOUBLE), 5: ("table", Table({0: ("d", float(v))}))}
    else:
        fields = {0: ("b", V_NULL)}
    if output:
        fields[7] = ("table", Table({0: ("?", True)}))
    return Table(fields)


def _profile_event(name: str, chain: int, instruction: int, start: int, end: int,
                   delegate_str: Optional[str] = None, metadata: bytes = b"") -> Table:
    return Table({0: ("str", name), 1: ("i", chain), 2: ("i", instruction), 3: ("i", -1),
                  4: ("str", delegate_str), 5: ("bytes", metadata or None),
                  6: ("Q", max(start, 0)), 7: ("Q", max(end, start, 0))})


def _debug_event(chain: int, instruction: int, value: Table) -> Table:
    return Table({0: ("Q", chain), 1: ("i", instruction), 2: ("table", value), 3: ("i", -1)})


@dataclass
class _Call:
    events: Sequence[Any]                # profiling.ProfileEvent
    debug: Sequence[Any] = ()            # profiling.DebugValue
    outputs: Optional[Sequence[Any]] = None


def _run(call: _Call, t0: int, debug_buf: Optional[_DebugBuffer]) -> Tuple[Table, int]:
    """One RunData for a call whose times start at t0 (ns); returns it and the call's end."""
    events: List[Table] = []
    ev = lambda t: events.append(Table({0: ("table", t)}))  # noqa: E731
    dv = lambda t: events.append(Table({2: ("table", t)}))  # noqa: E731
    where: Dict[int, Tuple[int, int]] = {}
    end_of_call = t0
    debug_by_instruction: Dict[int, List[Any]] = {}
    for d in call.debug:
        debug_by_instruction.setdefault(d.instruction, []).append(d)
    top = [e for e in call.events if e.depth == 0]
    nodes: Dict[int, List[Any]] = {}
    for e in call.events:
        if e.depth == 1:
            nodes.setdefault(e.instruction, []).append(e)
    for e in top:
        chain = getattr(e, "chain", 0)
        ins = getattr(e, "chain_instruction", -1)
        ins = e.instruction if ins < 0 else ins
        where[e.instruction] = (chain, ins)
        start = t0 + int(round(e.start_us * 1e3))
        end = start + int(round(e.duration_us * 1e3))
        end_of_call = max(end_of_call, end)
        if e.instruction in nodes:  # a delegate call: its nodes end first, then the call
            counts: Dict[str, int] = {}
            for n in nodes[e.instruction]:
                counts[n.name] = counts.get(n.name, 0) + 1
                ns = t0 + int(round(n.start_us * 1e3))
                ev(_profile_event(n.name, chain, ins, ns, ns + int(round(n.duration_us * 1e3)),
                                  f"{n.name} #{counts[n.name]}", n.shape.encode() if n.shape else b""))
            ev(_profile_event("DELEGATE_CALL", chain, ins, start, end))
        elif e.name == "XnnpackBackend":  # a delegate call without node events
            ev(_profile_event("DELEGATE_CALL", chain, ins, start, end))
        else:
            ev(_profile_event(op_event_name(e.name), chain, ins, start, end))
            ev(_profile_event("OPERATOR_CALL", chain, ins, start, end))
        if debug_buf is not None:
            for v in debug_by_instruction.get(e.instruction, []):  # one event per value, as ExecuTorch logs
                dv(_debug_event(chain, ins, _value(v.value, v.dtype, debug_buf)))
    if debug_buf is not None and call.outputs is not None:
        from . import dtypes
        for out in call.outputs:
            code = -1
            if isinstance(out, np.ndarray):
                code = dtypes.from_numpy(out.dtype)
                code = 6 if code is None else code
            dv(_debug_event(UNSET_CHAIN_ULONG, 0, _value(out, code, debug_buf, output=True)))
    ev(_profile_event("Method::execute", -1, 0, t0, end_of_call))
    run = Table({0: ("str", RUN_NAME), 1: ("i", -1), 3: ("tables", events)})
    return run, end_of_call


def build(calls: Sequence[_Call], debug_buffer: bool = False) -> Tuple[bytes, bytes]:
    """(ETDump bytes, debug buffer bytes) for profiled calls, one run each."""
    buf = _DebugBuffer() if debug_buffer else None
    runs, t = [], 1000
    for c in calls:
        run, end = _run(c, t, buf)
        runs.append(run)
        t = end + 1000
    root = Table({0: ("I", VERSION), 1: ("tables", runs)})
    return finish(root, IDENTIFIER, size_prefixed=True), bytes(buf.data) if buf is not None else b""


def write(calls: Sequence[_Call], path: "str | os.PathLike[str]",
          debug_buffer_path: "str | os.PathLike[str] | None" = None) -> None:
    data, debug = build(calls, debug_buffer_path is not None)
    with open(path, "wb") as fh:
        fh.write(data)
    if debug_buffer_path is not None:
        with open(debug_buffer_path, "wb") as fh:
            fh.write(debug)


def calls_of(profile: Any) -> List[_Call]:
    """The calls of a profiling.Profile (its debug values and outputs with the last call)."""
    out = [_Call(events) for events in profile.calls]
    for c, debug in zip(out, getattr(profile, "debug_calls", []) or []):
        c.debug = debug
    if out:
        out[-1].outputs = list(profile.outputs) if profile.outputs is not None else None
    return out


# ---- reading (tests, tools): plain dicts, field names as in the schema ----

@dataclass
class RunData:
    name: str
    bundled_input_index: int
    events: List[Dict[str, Any]] = field(default_factory=list)


def _read_value(r: Reader, t: int, debug: Optional[bytes]) -> Dict[str, Any]:
    kind = r.scalar(t, 0, "b", 0)
    out: Dict[str, Any] = {"val": _VALUE_NAMES[kind] if 0 <= kind < 8 else kind}
    ob = r.table(t, 7)
    out["output"] = bool(r.scalar(ob, 0, "?", False)) if ob is not None else False

    def tensor(tt: int) -> Dict[str, Any]:
        d = {"scalar_type": r.scalar(tt, 0, "b", 0), "sizes": r.vector(tt, 1, "q"),
             "strides": r.vector(tt, 2, "q"), "offset": r.scalar(tt, 3, "q", 0)}
        if debug is not None:
            from . import dtypes
            dt = np.dtype(dtypes.to_numpy(d["scalar_type"]))
            n = int(np.prod(d["sizes"])) if d["sizes"] else 1
            d["data"] = np.frombuffer(debug, dt, n, d["offset"]).reshape(d["sizes"])
        return d
    if kind == V_TENSOR:
        out["tensor"] = tensor(r.table(t, 1))
    elif kind == V_TENSOR_LIST:
        out["tensors"] = [tensor(x) for x in r.tables(r.table(t, 2), 0)]
    elif kind == V_INT:
        out["int_val"] = r.scalar(r.table(t, 3), 0, "q")
    elif kind == V_BOOL:
        out["bool_val"] = bool(r.scalar(r.table(t, 6), 0, "?"))
    elif kind == V_DOUBLE:
        out["double_val"] = r.scalar(r.table(t, 5), 0, "d")
    return out


def read_etdump(data: bytes, debug_buffer: Optional[bytes] = None) -> Tuple[int, List[RunData]]:
    """(version, runs) of an ETDump file's bytes; each event a dict with its kind
    ("profile_event" / "debug_event") and the schema's fields."""
    r = Reader(data, size_prefixed=True)
    if r.identifier() != IDENTIFIER:
        raise ValueError(f"not an ETDump (identifier {r.identifier()!r})")
    root = r.root()
    runs = []
    for rt in r.tables(root, 1):
        run = RunData(r.string(rt, 0) or "", r.scalar(rt, 1, "i", -1))
        for et in r.tables(rt, 3):
            p, d = r.table(et, 0), r.table(et, 2)
            if p is not None:
                run.events.append({
                    "kind": "profile_event", "name": r.string(p, 0), "chain_index": r.scalar(p, 1, "i", 0),
                    "instruction_id": r.scalar(p, 2, "i", -1), "delegate_debug_id_int": r.scalar(p, 3, "i", -1),
                    "delegate_debug_id_str": r.string(p, 4), "delegate_debug_metadata": bytes(r.vector(p, 5, "B")),
                    "start_time": r.scalar(p, 6, "Q", 0), "end_time": r.scalar(p, 7, "Q", 0)})
            elif d is not None:
                vt = r.table(d, 2)
                run.events.append({
                    "kind": "debug_event", "chain_index": r.scalar(d, 0, "Q", 0),
                    "instruction_id": r.scalar(d, 1, "i", -1), "name": r.string(d, 5),
                    "debug_entry": _read_value(r, vt, debug_buffer) if vt is not None else None})
        runs.append(run)
    return r.scalar(root, 0, "I", 0), runs
