"""Operators defined in Python: ``register_op("mylib::foo.out", fn)``.

A program's call to an operator that no native kernel implements is routed, through a cffi
callback, to the Python function registered under its name. Registration must happen before
the method is loaded (kernels are resolved at ``load_method``).

The function receives the call's arguments in schema order as Python values: tensors as numpy
arrays (inputs read-only, views of runtime memory whose contents are valid only during the call:
copy what you keep; a view kept longer keeps that memory allocated, so reading it later shows
stale data but never crashes), ints, floats, bools, None, strings and int/float lists. The ``num_outputs`` trailing
tensor arguments of an ``.out`` operator are passed as the ``out`` keyword (one array, or a
tuple when ``num_outputs > 1``). The function either writes them in place and returns None, or
returns the result array(s), which are copied into the outs (resized within their planned
capacity when the shape differs; dtype cast with numpy's ``same_kind`` rule).

An exception raised by the function fails the method call with ``ExecutionError``, chained to
it; ``KeyboardInterrupt``, ``SystemExit`` and other non-``Exception`` errors propagate as themselves. The function must not run methods of the Runtime that is calling it.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from . import dtypes
from ._native import _string, check, ffi, lib

_KIND_NONE, _KIND_INT, _KIND_BOOL, _KIND_DOUBLE, _KIND_TENSOR, _KIND_STRING = 0, 1, 2, 3, 4, 5
_KIND_INT_LIST, _KIND_DOUBLE_LIST = 6, 7

class _CallState(threading.local):
    """Per-thread call state. Class-level defaults make a missing attribute an ordinary lookup
    (getattr with a default on a bare threading.local costs ~0.4 us per call)."""

    lock = None      # the Runtime lock held by the method call running on this thread
    pending = None   # an exception raised inside a Python-defined op, re-raised after the call
    owner = None     # what keeps the memory of that call's tensors alive (views hold it)


_tls = _CallState()
_registry: Dict[str, "_Entry"] = {}  # loaded methods keep the entries they call (Method._py_ops)
_reg_lock = threading.Lock()


class _Entry:
    def __init__(self, name: str, fn: Callable[..., Any], num_outputs: int):
        self.name, self.fn, self.num_outputs = name, fn, num_outputs
        self.handle = ffi.new_handle(self)


class _Memory:
    """The base of a tensor view handed to a Python op: holds what keeps that memory allocated
    (the native method, and the call's input arrays) for as long as the view lives."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, interface: dict, owner: Any) -> None:
        self.__array_interface__ = interface
        self.owner = owner


def _tensor_view(a, writable: bool) -> np.ndarray:
    dt = dtypes.to_numpy(a.dtype)
    shape = tuple(a.sizes[k] for k in range(a.ndim))
    if a.nbytes == 0:
        arr = np.empty(shape, dt)
    else:
        owner = _tls.owner
        if owner is None:
            raise RuntimeError("a Python operator was called outside a method call")
        iface = {"shape": shape, "typestr": dt.str, "version": 3,
                 "data": (int(ffi.cast("uintptr_t", a.data)), not writable)}
        arr = np.asarray(_Memory(iface, owner))
        if arr.dtype != dt:
            arr = arr.view(dt)
    if not writable:
        arr.flags.writeable = False
    return arr


def _value(a) -> Any:
    k = a.kind
    if k == _KIND_TENSOR:
        return _tensor_view(a, False)
    if k == _KIND_INT:
        return int(a.i)
    if k == _KIND_BOOL:
        return bool(a.i)
    if k == _KIND_DOUBLE:
        return float(a.d)
    if k == _KIND_NONE:
        return None
    if k == _KIND_STRING:
        return ffi.string(a.str, a.len).decode("utf-8", "replace")
    if k == _KIND_INT_LIST:
        return [int(a.ints[j]) for j in range(a.len)]
    if k == _KIND_DOUBLE_LIST:
        return [float(a.doubles[j]) for j in range(a.len)]
    raise TypeError(f"argument kind {k} is not supported by Python operators")


def _store(call, args, index: int, result: Any, name: str) -> None:
    r = np.asarray(result)
    a = args[index]
    if tuple(r.shape) != tuple(a.sizes[k] for k in range(a.ndim)):
        sizes = ffi.new("int64_t[]", list(r.shape) or [0])
        check(lib.etnp_op_resize(call, index, r.ndim, sizes), f"{name}: resizing output")
    out = _tensor_view(a, True)
    np.copyto(out, r, casting="same_kind")


def _invoke(entry: _Entry, call, args, nargs: int) -> None:
    nout = entry.num_outputs
    if nargs < nout:
        raise TypeError(f"{entry.name} was called with {nargs} arguments, fewer than its {nout} outputs")
    first_out = nargs - nout
    for j in range(first_out, nargs):
        if args[j].kind != _KIND_TENSOR:
            raise TypeError(f"{entry.name}: argument {j} should be an out tensor (num_outputs={nout})")
        # (the runtime's resize at the out's own shape: it refuses an out that is a constant of the
        # program - a malformed program - before the function can write it)
        check(lib.etnp_op_resize(call, j, args[j].ndim, args[j].sizes), f"{entry.name}: out tensor {j - first_out}")
    inputs = [_value(args[j]) for j in range(first_out)]
    outs = tuple(_tensor_view(args[j], True) for j in range(first_out, nargs))
    kw = {"out": outs[0] if nout == 1 else outs} if nout else {}
    result = entry.fn(*inputs, **kw)
    if result is None:
        return
    results = tuple(result) if isinstance(result, tuple) else (result,)
    if len(results) != nout:
        raise ValueError(f"{entry.name} returned {len(results)} values, expected {nout}")
    for j, r in enumerate(results):
        _store(call, args, first_out + j, r, entry.name)


@ffi.callback("int(void *, etnp_op_call *, etnp_op_arg *, size_t)")
def _trampoline(user, call, args, nargs):
    entry = ffi.from_handle(user)
    try:
        _invoke(entry, call, args, nargs)
        return 0
    except BaseException as e:  # never let an exception cross into C
        _tls.pending = e
        lib.etnp_op_fail(call, f"Python operator {entry.name} raised {type(e).__name__}: {e}".encode("utf-8", "replace"))
        return 1


def take_pending_exception() -> Optional[BaseException]:
    """The exception a Python operator raised during this thread's last failing call."""
    e = _tls.pending
    _tls.pending = None
    return e


def register_op(name: str, fn: Optional[Callable[..., Any]] = None, *, num_outputs: int = 1):
    """Register ``fn`` as the kernel of operator ``name`` (e.g. ``"mylib::scale.out"``).

    Usable as a decorator: ``@register_op("mylib::scale.out")``. Re-registering a name replaces
    its function for methods loaded afterwards. A name with a native kernel, or one that is not
    ``namespace::name[.overload]`` (letters, digits, '_'; at most 256 bytes) is refused (``ValueError``)."""
    if not isinstance(name, str):
        raise TypeError(f"register_op needs the operator's name as a str, not {type(name).__name__}")
    if "\0" in name:
        raise ValueError("operator names cannot contain NUL characters")
    if fn is None:
        return lambda f: register_op(name, f, num_outputs=num_outputs)
    if not callable(fn):
        raise TypeError("register_op needs a callable")
    if not isinstance(num_outputs, int) or num_outputs < 0:
        raise ValueError("num_outputs must be a non-negative int")
    entry = _Entry(name, fn, num_outputs)
    with _reg_lock:
        if lib.etnp_register_op(name.encode(), _trampoline, entry.handle) != 0:
            raise ValueError(_string(lib.etnp_last_error_message()))
        _registry[name] = entry
    return fn


def unregister_op(name: str) -> None:
    """Remove a Python operator (methods already loaded keep calling it)."""
    with _reg_lock:
        if lib.etnp_unregister_op(name.encode()) != 0:
            raise KeyError(name)
        _registry.pop(name, None)


def _entries_for(names: List[str]) -> tuple:
    """The registered entries of these operator names (the caller holds _reg_lock)."""
    return tuple(_registry[n] for n in names if n in _registry)


def registered_ops() -> List[str]:
    """Names of the operators registered from Python."""
    with _reg_lock:
        return sorted(_registry)
