"""Method: a loaded method of a Program, and its call path (inputs to the core, outputs back)."""
from __future__ import annotations

import signal
import threading
import time
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

import numpy as np

from . import custom_ops, dtypes, named_io
from ._native import check, ffi, lib
from .errors import ExecuTorchError, ExecutionError
from .metadata import _KIND_NAMES, MethodMeta, StateMeta, _meta
from .runtime_lock import _check_not_inside_op, _holding

_KIND_NONE, _KIND_INT, _KIND_BOOL, _KIND_DOUBLE, _KIND_TENSOR = 0, 1, 2, 3, 4
_MAIN_THREAD = threading.main_thread().ident


_SIGMASK = getattr(signal, "pthread_sigmask", None)  # (POSIX)


def _run_tripped_signal_handlers() -> None:
    """Runs the Python handlers of the signals that arrived during a call now, before the call's
    error is raised. A SIGINT that stopped the call was passed on to Python's own handler, which
    only records it; Python runs the recorded handler (KeyboardInterrupt for the default one) at
    a later check. CPython checks before the next bytecode; PyPy's JIT-compiled code only at a
    backward jump, and where another thread saw the signal first, only once the main thread next
    takes the GIL from another - so a SIGINT could surface after the call's ExecutionError had
    been raised, somewhere in the caller's code. pthread_sigmask (here blocking nothing) runs the
    pending handlers before it returns, in both (PyErr_CheckSignals, PyPy's checksignals)."""
    if _SIGMASK is not None:
        _SIGMASK(signal.SIG_BLOCK, ())
_get_ident = threading.get_ident
_clock = time.perf_counter
# A call shorter than this needs no SIGINT re-chain check before the method's next call (below)
_SHORT_CALL_S = 1e-3

if TYPE_CHECKING:
    from .runtime import Program


def _timeout_seconds(timeout: Any) -> float:
    """A call's timeout for the core: seconds > 0, or 0.0 for none (None or +inf; a timeout too
    large for the clock is none too). NaN, zero, negatives and non-numbers raise ValueError."""
    if timeout is None:
        return 0.0
    if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, (int, float, np.integer, np.floating)):
        raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout!r}")
    try:
        seconds = float(timeout)
    except OverflowError:  # an int beyond the float range: a deadline no clock reaches
        seconds = float("inf") if timeout > 0 else float("-inf")
    if not seconds > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout!r}")
    return 0.0 if seconds == float("inf") else seconds


class Method:
    """A runnable method. Call it with a sequence of inputs; returns a list of outputs.

    Tensor inputs are numpy arrays of exactly the expected dtype (uint16 = bfloat16 bits,
    or ml_dtypes.bfloat16). C-contiguous, aligned arrays are passed to the core without a
    copy (read-only arrays too); other layouts are copied first. Lists and Python scalars
    given for a tensor input are converted to the expected dtype. Outputs are always
    fresh arrays that the caller owns.
    """

    def __init__(self, program: Program, name: str, ptr, py_ops: Sequence[Any] = ()) -> None:
        self._program = program
        self._py_ops = tuple(py_ops)  # the Python-defined ops this method calls: alive while it is
        self._limits = (0.0, False)
        self._short = False  # the method's last call (fast path) took < _SHORT_CALL_S
        self._lock = program.runtime._lock
        self._ptr = ptr
        self.name = name
        m = ffi.new("etnp_value_meta *")
        ins, outs = [], []
        for i in range(lib.etnp_method_num_inputs(ptr)):
            check(lib.etnp_method_input_meta(ptr, i, m))
            ins.append(_meta(m))
        for i in range(lib.etnp_method_num_outputs(ptr)):
            check(lib.etnp_method_output_meta(ptr, i, m))
            outs.append(_meta(m))
        state = []
        name_p = ffi.new("const char **")
        for i in range(lib.etnp_method_num_state(ptr)):
            check(lib.etnp_method_state_meta(ptr, i, m, name_p))
            sname = ffi.string(name_p[0]).decode("utf-8", "replace") or f"state_{i}"
            state.append(StateMeta(sname, dtypes.dtype_name(m.dtype), tuple(int(m.sizes[d]) for d in range(m.ndim))))
        self._meta = MethodMeta(name, tuple(ins), tuple(outs), tuple(state))
        self._in_codes = []
        for i in range(len(ins)):
            check(lib.etnp_method_input_meta(ptr, i, m))
            self._in_codes.append((m.kind, m.dtype))
        # per-call C structures, reused (calls are serialised by the runtime lock)
        self._cin = ffi.new("etnp_input[]", max(len(ins), 1))
        self._shapes = [ffi.new("int64_t[16]") for _ in ins]
        self._res = ffi.new("etnp_result **")
        self._cin_items = [self._cin[i] for i in range(len(ins))]
        self._last_shapes: List[Optional[Tuple[int, ...]]] = [None] * len(ins)
        for i, (kind, code) in enumerate(self._in_codes):
            if kind == _KIND_TENSOR:
                c = self._cin_items[i]
                c.kind, c.dtype, c.sizes, c.ndim = kind, code, self._shapes[i], 0
        self._meta_buf = ffi.new("etnp_value_meta *")
        # outputs whose shape cannot change (static tensors): their arrays need no per-call metadata
        static_outs = []
        for i in range(len(outs)):
            check(lib.etnp_method_output_meta(ptr, i, m))
            if m.kind != _KIND_TENSOR or m.dynamic != 0 or (m.dtype not in dtypes._CODE_TO_NP and m.dtype != dtypes.BF16_CODE):
                static_outs = None
                break
            dt = dtypes.to_numpy(m.dtype)
            carrier = np.dtype(np.uint16) if m.dtype == dtypes.BF16_CODE else dt
            static_outs.append((tuple(int(m.sizes[d]) for d in range(m.ndim)), dt, carrier, int(m.nbytes)))
        self._static_outs = static_outs
        if static_outs is not None:
            self._out_ptrs = ffi.new("void *[]", max(len(static_outs), 1))
            self._out_nbytes = ffi.new("size_t[]", [nb for _, _, _, nb in static_outs] or [0])
        self._num_inputs = len(ins)
        self._fast_dtypes = [dtypes.to_numpy(code) if kind == _KIND_TENSOR and code in dtypes._CODE_TO_NP else None
                             for kind, code in self._in_codes]

    @property
    def metadata(self) -> MethodMeta:
        return self._meta

    @property
    def input_names(self) -> Tuple[str, ...]:
        """Names for dict/keyword feeds: the exported keyword names, else ``input_<i>``."""
        return self._io_names()[0]

    @property
    def output_names(self) -> Tuple[str, ...]:
        """The exported dict keys of the outputs, else ``output_<i>``."""
        return self._io_names()[1]

    def _io_names(self) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
        names = self.__dict__.get("_names")
        if names is None:
            try:
                names = self._program.io_names(self.name)
            except ExecuTorchError:  # the program was closed: positional names
                names = named_io.io_names("", "", len(self._meta.inputs), len(self._meta.outputs))
            self._names = names
        return names

    def run_named(self, inputs: Any = (), **feeds: Any) -> dict:
        """Runs the method (inputs as a sequence, a dict of name -> value, or keywords) and
        returns a dict of output name -> value."""
        return dict(zip(self.output_names, self(inputs, **feeds)))

    def profile(self, inputs: Any = (), *, repeat: int = 1, intermediate_outputs: Any = None, **feeds: Any):
        """Runs the method ``repeat`` times with profiling on; returns a ``Profile`` of the last
        call (per-instruction times and per-node times inside XNNPACK delegate calls). Calls of this
        method made meanwhile from other threads are profiled too (and may be the ones read).
        ``intermediate_outputs`` (True / instruction indices) also captures those instructions'
        outputs (``Profile.debug_values``; ``Profile.to_etdump(path, debug_buffer_path)``)."""
        from .profiling import profile_method
        return profile_method(self, inputs, feeds, repeat, intermediate_outputs)

    def __reduce__(self):
        from .pickling import reduce_method
        return reduce_method(self)

    @property
    def program(self) -> Program:
        return self._program

    def reset(self) -> None:
        """Put the method's state (``metadata.state``: buffers such as KV caches, which keep
        their contents from call to call) back to the program's initial values."""
        with _holding(self._lock, "reset a method"):
            check(lib.etnp_method_reset(self._ptr), f"resetting {self.name!r}")

    def memory_stats(self) -> dict:
        """Bytes this method holds, by kind: ``program_bytes`` (the program file as its Program holds
        it: its copy or mapping, less the pages given back after packing), ``data_file_bytes`` (.ptd copies), ``planned``
        (memory-planned buffers' sizes: their pages that no call has written are not resident), ``folded`` (constants folded at load), ``packed_weights``,
        ``constants`` (decoded constant copies), ``values`` (intermediate buffers) and ``scratch``
        of its delegates, and ``mapped_weights`` (packed weights, and constants that kernels read in
        place, viewed in a weight cache file's shared read-only mapping: not in ``packed_weights``
        nor ``program_bytes``). The program's figures are shared by all its methods."""
        s = ffi.new("etnp_memory_stats *")
        check(lib.etnp_method_memory_stats(self._ptr, s), f"reading the memory of {self.name!r}")
        return {k: int(getattr(s, k)) for k in ("program_bytes", "data_file_bytes", "planned", "folded",
                                                  "packed_weights", "constants", "values", "scratch",
                                                  "mapped_weights")}

    def _tensor(self, i: int, x: Any, code: int) -> np.ndarray:
        if not isinstance(x, np.ndarray):
            if isinstance(x, np.generic):
                x = np.asarray(x)
            else:
                try:
                    x = np.asarray(x, dtype=dtypes.to_numpy(code))
                except (TypeError, ValueError) as e:
                    raise ExecutionError(f"input {i}: cannot convert {type(x).__name__} to a tensor: {e}") from None
        got = dtypes.from_numpy(x.dtype)
        if got is None and x.dtype.kind in "biuf" and x.dtype.byteorder == ">":
            x = x.astype(x.dtype.newbyteorder("="))
            got = dtypes.from_numpy(x.dtype)
        if got != code:
            raise ExecutionError(
                f"input {i}: expected dtype {dtypes.dtype_name(code)}, got {x.dtype}"
                + (" (pass bfloat16 as uint16 bits or ml_dtypes.bfloat16)" if code == dtypes.BF16_CODE else ""))
        if not (x.flags.c_contiguous and x.flags.aligned):
            x = np.ascontiguousarray(x)
        return x

    def cancel(self) -> None:
        """Stop this method's call in progress (from another thread): it raises ExecutionError."""
        lib.etnp_method_cancel(self._ptr)

    def _set_limits(self, timeout: Optional[float], recheck: bool = True) -> None:
        seconds = 0.0 if timeout is None else _timeout_seconds(timeout)
        main = _get_ident() == _MAIN_THREAD
        if main and recheck:
            # (re)chains to the process's SIGINT handler when it is not ours any more (one sigaction
            # query; signal.signal() replaces it even when it sets the same Python handler), then
            # a Ctrl-C from here on stops the call, also one that arrives before the call starts.
            # Skipped (recheck false) after a call of under 1 ms - the query is a system call, up
            # to a tenth of such a call: a Ctrl-C during a call that short is the same as one just
            # after it. Our handler, once installed, stays until something replaces it; only a
            # long call right after a short one and a replacement in between is then stopped by
            # Python's own handler (KeyboardInterrupt as the call returns) instead of at once.
            lib.etnp_method_watch_interrupts(self._ptr)
        limits = self._limits
        if seconds != limits[0] or main is not limits[1]:
            check(lib.etnp_method_set_run_limits(self._ptr, seconds, int(main)))
            self._limits = (seconds, main)

    def __call__(self, inputs: Sequence[Any] = (), *, timeout: Optional[float] = None,
                 outputs: Optional[Sequence[np.ndarray]] = None, **feeds: Any) -> List[Any]:
        """Run the method. ``inputs`` is a sequence, or a dict of input name -> value (also as
        keywords: ``method(image=x)``; see ``input_names``). ``outputs``: arrays of the outputs'
        dtypes and shapes to fill in place (returned). ``timeout`` (seconds) stops a call that
        runs longer (ExecutionError); Ctrl-C stops a call made from the main thread
        (KeyboardInterrupt); every call stops after 10**7 instructions (a program that loops)."""
        lock = self._lock
        if (outputs is None and not feeds and (type(inputs) is list or type(inputs) is tuple)
                and len(inputs) == self._num_inputs and not lock.locked()):
            # the common call (a list of inputs, fresh outputs) while the lock is free, so not held
            # by this thread (a thread inside a Python operator of this Runtime holds it: the
            # general path below refuses that call); another thread may take it first: waited for
            with lock:
                short, self._short = self._short, False  # (a call that raises leaves it False)
                self._set_limits(timeout, not short)
                t = _clock()
                outs = self._run(self._bind(inputs), None)
                self._short = _clock() - t < _SHORT_CALL_S
                return outs
        if feeds or isinstance(inputs, dict):
            inputs = named_io.order_feeds(self.input_names, self.name, inputs, feeds)
        dests = None
        if outputs is not None:
            from .out_arrays import aliases_inputs, copy_into, destinations
            dests = destinations(self, outputs)  # the arrays' uint16/etc. carriers; None: dynamic outputs
            if dests is None or aliases_inputs(inputs, dests):  # results copied in after the call
                return copy_into(self, outputs, self(inputs, timeout=timeout))
        if not isinstance(inputs, (list, tuple)):
            raise TypeError("a Method takes a list or tuple of inputs")
        n = len(inputs)
        if n != self._num_inputs:
            raise ExecutionError(f"method {self.name!r} takes {self._num_inputs} inputs, got {n}")
        if custom_ops._tls.lock is lock:
            _check_not_inside_op(lock, f"call method {self.name!r}")
        # the per-call C structures are reused: built under the lock
        with lock:
            self._set_limits(timeout)
            outs = self._run(self._bind(inputs), dests)
            return outs if dests is None else list(outputs)

    def _bind(self, inputs: Sequence[Any]) -> List[Any]:
        """Fills the reused input descriptors (the lock is held); returns the cdata that keep the
        inputs' memory (the arrays, or their converted copies) alive over the call."""
        codes, items, fast, last = self._in_codes, self._cin_items, self._fast_dtypes, self._last_shapes
        keep = []
        for i in range(len(inputs)):
            x = inputs[i]
            kind, code = codes[i]
            c = items[i]
            if kind == _KIND_TENSOR:  # kind, dtype and the sizes array are set once, at load
                if type(x) is not np.ndarray or x.dtype is not fast[i] or not (f := x.flags).c_contiguous or not f.aligned:
                    x = self._tensor(i, x, code)
                shape = x.shape
                if shape != last[i]:
                    nd = len(shape)
                    if nd > 16:
                        raise ExecutionError(f"input {i}: rank {nd} is above the maximum of 16")
                    self._shapes[i][0:nd] = shape
                    c.ndim = nd
                    last[i] = shape
                nbytes = x.nbytes
                if nbytes:
                    try:
                        data = ffi.from_buffer("char[]", x)
                    except (TypeError, ValueError, BufferError):  # dtypes without a buffer format (ml_dtypes)
                        data = ffi.from_buffer("char[]", x.reshape(-1).view(np.uint8))
                else:
                    data = ffi.NULL
                keep.append(data)  # the cdata keeps its array (x, or x's copy) alive
                c.data, c.nbytes = data, nbytes
            else:
                self._scalar(i, x, kind, c)
        return keep

    def _run(self, keep: List[Any], dests: Optional[List[np.ndarray]]) -> List[Any]:
        """Runs the bound call (the lock is held): outputs into fresh arrays, or into ``dests``."""
        n = self._num_inputs
        static = self._static_outs
        if static is not None:  # static output shapes: one call runs and fills the arrays
            ptrs, outs, bufs = self._out_ptrs, [], []  # bufs keeps the cdata alive over the call
            for j, (shape, dt, carrier, nbytes) in enumerate(static):
                arr = np.empty(shape, carrier) if dests is None else dests[j]
                if nbytes:
                    b = ffi.from_buffer(arr)
                    bufs.append(b)
                    ptrs[j] = b
                else:
                    ptrs[j] = ffi.NULL
                outs.append(arr if carrier is dt else arr.view(dt))
            if self._py_ops:
                status = self._run_with_callbacks(keep, lib.etnp_method_run_into, self._ptr, self._cin, n, ptrs,
                                                  self._out_nbytes, len(outs))
            else:  # no Python operator: nothing calls back during the call
                status = lib.etnp_method_run_into(self._ptr, self._cin, n, ptrs, self._out_nbytes, len(outs))
            if status:
                self._raise_run_error(status)
            return outs
        if self._py_ops:
            status = self._run_with_callbacks(keep, lib.etnp_method_run, self._ptr, self._cin, n, self._res)
        else:
            status = lib.etnp_method_run(self._ptr, self._cin, n, self._res)
        if status:
            self._raise_run_error(status)
        result = self._res[0]
        try:
            return self._outputs(result)
        finally:
            lib.etnp_result_destroy(result)

    def _run_with_callbacks(self, keep: List[Any], fn: Any, *args: Any) -> int:
        """fn(*args) with this thread's call state set for the Python operators it calls back:
        the Runtime lock held (re-entrance refused) and what keeps the call's tensors alive."""
        tls = custom_ops._tls
        outer, owner = tls.lock, tls.owner
        tls.lock, tls.owner = self._lock, (self._ptr, keep)
        try:
            return fn(*args)
        finally:
            tls.lock, tls.owner = outer, owner

    def _raise_run_error(self, status: int) -> None:
        if status == lib.ETNP_ERR_CANCELLED and _get_ident() == _MAIN_THREAD:
            _run_tripped_signal_handlers()  # a Ctrl-C that stopped the call: KeyboardInterrupt here
        cause = custom_ops.take_pending_exception()  # an exception raised inside a Python-defined op
        if cause is not None and not isinstance(cause, Exception):
            raise cause  # KeyboardInterrupt, SystemExit... propagate as themselves
        try:
            check(status, f"running {self.name!r}")
        except ExecuTorchError as e:
            if cause is None:
                raise
            raise e from cause

    @staticmethod
    def _scalar(i: int, x: Any, kind: int, c) -> None:
        if kind in (_KIND_INT, _KIND_BOOL):
            if isinstance(x, np.ndarray) and x.size == 1:
                x = x.item()
            if not isinstance(x, (int, bool, np.integer, np.bool_)):
                raise ExecutionError(f"input {i}: expected an int, got {type(x).__name__}")
            c.kind, c.int_value = (_KIND_BOOL if isinstance(x, (bool, np.bool_)) else _KIND_INT), int(x)
        elif kind == _KIND_DOUBLE:
            if isinstance(x, np.ndarray) and x.size == 1:
                x = x.item()
            if not isinstance(x, (int, float, np.integer, np.floating)) or isinstance(x, bool):
                raise ExecutionError(f"input {i}: expected a float, got {type(x).__name__}")
            c.kind, c.double_value = _KIND_DOUBLE, float(x)
        elif kind == _KIND_NONE:
            if x is not None:
                raise ExecutionError(f"input {i}: expected None")
            c.kind = _KIND_NONE
        else:
            raise ExecutionError(f"input {i}: inputs of kind {_KIND_NAMES.get(kind, kind)} are not supported")

    def _outputs(self, result) -> List[Any]:
        m = self._meta_buf
        outs: List[Any] = []
        for i in range(lib.etnp_result_num_outputs(result)):
            check(lib.etnp_result_output_meta(result, i, m))
            if m.kind == _KIND_TENSOR:
                shape = tuple(int(m.sizes[d]) for d in range(m.ndim))
                dt = dtypes.to_numpy(m.dtype)
                carrier = np.dtype(np.uint16) if m.dtype == dtypes.BF16_CODE else dt
                arr = np.empty(shape, dtype=carrier)
                if m.nbytes:
                    check(lib.etnp_result_copy_output(result, i, ffi.from_buffer("char[]", arr), m.nbytes))
                outs.append(arr.view(dt) if carrier != dt else arr)
            elif m.kind == _KIND_INT:
                outs.append(int(m.int_value))
            elif m.kind == _KIND_BOOL:
                outs.append(bool(m.int_value))
            elif m.kind == _KIND_DOUBLE:
                outs.append(float(m.double_value))
            elif m.kind == _KIND_NONE:
                outs.append(None)
            else:
                raise ExecutionError(f"output {i}: outputs of kind {_KIND_NAMES.get(m.kind, m.kind)} are not supported")
        return outs

    execute = __call__

    def __repr__(self) -> str:
        return f"Method({self._meta})"

