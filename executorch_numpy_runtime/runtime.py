"""Runtime and Program: the public API over the native core (Method, a loaded method: method.py)."""
from __future__ import annotations

import os
import threading
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import custom_ops, dtypes, named_io, sources
from ._native import check, ffi, lib
from .errors import ExecuTorchError, ExecutionError, MethodNotFound, ProgramLoadError

ProgramSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]  # + mmap, binary files


def _name_bytes(name: str, what: str = "method name") -> bytes:
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str")
    if "\0" in name:
        raise ValueError(f"{what} {name!r} contains a NUL character")
    return name.encode()


from .metadata import _KIND_NAMES, MethodMeta, StateMeta, ValueMeta, _meta  # noqa: E402,F401  (re-exported)
from .method import _KIND_TENSOR, Method, _timeout_seconds  # noqa: E402,F401  (re-exported)
from .runtime_lock import _check_not_inside_op, _holding  # noqa: E402,F401  (re-exported)


MAX_THREADS = 256  # the core's thread pool size limit (etnp_runtime_create)


class Runtime:
    """Owns a thread pool; serialises the method calls made through it.

    ``Runtime.get()`` is the shared process-wide instance; ``Runtime(num_threads=N)``
    makes an independent one (use one per thread for parallel inference).
    """

    _default: Optional["Runtime"] = None
    _default_lock = threading.Lock()

    def __init__(self, num_threads: Optional[int] = None) -> None:
        if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, int)
                                        or not 1 <= num_threads <= MAX_THREADS):
            raise ValueError(f"num_threads must be an int from 1 to {MAX_THREADS}, or None (the physical cores)")
        out = ffi.new("etnp_runtime **")
        check(lib.etnp_runtime_create(num_threads or 0, out), "creating runtime")
        self._ptr = ffi.gc(out[0], lib.etnp_runtime_destroy)
        self._lock = threading.Lock()

    @classmethod
    def get(cls) -> "Runtime":
        """The shared default Runtime (created on first use)."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    @property
    def num_threads(self) -> int:
        return int(lib.etnp_runtime_num_threads(self._ptr))

    def load_program(self, source: ProgramSource, data_files: Optional[Sequence[ProgramSource]] = None,
                     data_path: Optional[ProgramSource] = None, *, mmap: bool = False,
                     weight_cache: Union[bool, str, "os.PathLike[str]", None] = None) -> "Program":
        """Load a .pte program from a path, bytes-like data (bytes, bytearray, memoryview, mmap:
        copied) or a binary file object (read). A bundled program (.bpte) loads the program it bundles.

        A path is read into memory (a big file's weights as its methods load: the file stays open
        meanwhile), never mapped: a file rewritten in place before a method has read what it
        needs raises ProgramLoadError; other later changes do not affect the program.
        ``mmap=True`` maps the file instead (less memory, faster for big files), at a risk:
        truncating or rewriting the file while the program is loaded can then crash the
        process (SIGBUS) or silently change its results.

        ``data_files`` (a path or bytes-like object, or a list of them) are the external weight
        files (.ptd) of programs exported with ``external_constants=True``; ``data_path`` is
        ExecuTorch's name for one. ``mmap=True`` with a bundled program raises ValueError.

        ``weight_cache`` (opt-in) keeps the XNNPACK delegates' packed weights in a cache file: a
        path, or True for ``<program path>.etnpwc`` (in ``$ETNP_WEIGHT_CACHE_DIR`` when set). A
        method load finds its packed weights there and maps them read-only instead of packing
        (every process mapping the file shares one resident copy), or packs and writes the file.
        The file is checked against the program, this build and the CPU path: a stale, damaged or
        foreign file is rewritten, one that cannot be written is no error."""
        cache_path = sources.weight_cache_path(weight_cache, kind="path" if isinstance(source, (str, os.PathLike)) else "",
                                               source=source)
        files = sources.data_file_list(data_files, data_path)
        blobs = [sources.data_file(f) for f in files]
        out = ffi.new("etnp_program **")
        kind, src = sources.normalize(source, mmap)
        with _holding(self._lock, "load a program"):
            if kind == "path":
                check(lib.etnp_program_load_file_ex(self._ptr, src, 1 if mmap else 0, out),
                      f"loading {os.fsdecode(src)!r}")
            else:
                data = ffi.from_buffer(src)
                check(lib.etnp_program_load_bytes(self._ptr, data, len(data), out), "loading program bytes")
        ptr = ffi.gc(out[0], lib.etnp_program_destroy)
        if cache_path is not None:
            check(lib.etnp_program_set_weight_cache(ptr, os.fsencode(cache_path)), "setting the weight cache")
        for label, blob in blobs:
            with _holding(self._lock, "load a data file"):
                check(lib.etnp_program_add_data(ptr, ffi.from_buffer(blob), len(blob), label.encode("utf-8", "replace")),
                      f"loading data file {label}")
        prog = Program(self, ptr)
        # how to load it again in another process (pickle): the path, or the bytes the core holds
        prog._origin = (os.fsdecode(src), bool(mmap)) if kind == "path" else None
        prog._data_sources = [f if isinstance(f, (str, os.PathLike, bytes)) else bytes(f) for f in files]
        prog._weight_cache = cache_path
        return prog

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        """Pickles as how to make it again: the shared Runtime as ``Runtime.get()`` of the receiving
        process, another as a new ``Runtime`` of the same thread count (its pool is not shared)."""
        if self is Runtime._default:
            return Runtime.get, ()
        return Runtime, (self.num_threads,)

    def __repr__(self) -> str:
        return f"Runtime(num_threads={self.num_threads})"


class Program:
    """A loaded .pte program. Methods loaded from it keep it alive."""

    def __init__(self, runtime: Runtime, ptr) -> None:
        self._runtime = runtime
        self._ptr = ptr
        # close() while other threads use the program: the last user releases it
        self._use_lock = threading.Lock()
        self._users = 0
        self._closed = False
        self._origin: Optional[Tuple[str, bool]] = None  # (path, mmap) when loaded from a path
        self._data_sources: List[Any] = []
        self._weight_cache: Optional[str] = None  # the weight cache file's path, when one is used
        n = lib.etnp_program_num_methods(ptr)
        self._method_names = tuple(
            ffi.string(lib.etnp_program_method_name(ptr, i)).decode("utf-8", "replace") for i in range(n))

    @property
    def method_names(self) -> Tuple[str, ...]:
        return self._method_names

    @property
    def runtime(self) -> Runtime:
        return self._runtime

    def _acquire(self):
        with self._use_lock:
            if self._closed:
                raise ExecutionError("the program has been closed")
            self._users += 1
            return self._ptr

    def _release(self) -> None:
        ptr = None
        with self._use_lock:
            self._users -= 1
            if self._closed and self._users == 0:
                ptr, self._ptr = self._ptr, None
        if ptr is not None:
            ffi.release(ptr)

    def _check_method(self, name: str, what: str) -> None:
        if name not in self._method_names:
            raise MethodNotFound(f"{what} {name!r}: unknown method {name!r}; the program has: "
                                 f"{', '.join(self._method_names) or '(no methods)'}", str(name))

    def load_method(self, name: str = "forward") -> "Method":
        """Prepare a method: plan its memory, resolve kernels and initialise delegates. An unknown
        name raises MethodNotFound (an ExecutionError, and a KeyError as in ``executorch.runtime``)."""
        bname = _name_bytes(name)
        self._check_method(name, "loading method")
        _check_not_inside_op(self._runtime._lock, f"load method {name!r}")
        ptr = self._acquire()
        try:
            out = ffi.new("etnp_method **")
            # under the registry lock: the Python ops the method resolves stay alive with it
            with custom_ops._reg_lock:
                status = lib.etnp_method_load(ptr, bname, out)
                py_ops = custom_ops._entries_for(self._list(lib.etnp_program_method_ops, name, ptr)) if (
                    status == 0 and custom_ops._registry) else ()
            check(status, f"loading method {name!r}")
            return Method(self, name, ffi.gc(out[0], lib.etnp_method_destroy), py_ops)
        finally:
            self._release()

    def operators(self, method: str = "forward") -> List[str]:
        """The operators a method calls (whether or not this runtime has them)."""
        return self._list(lib.etnp_program_method_ops, method)

    def delegates(self, method: str = "forward") -> List[str]:
        """The backend ids of a method's delegate calls."""
        return self._list(lib.etnp_program_method_delegates, method)

    def signature(self, method: str = "forward") -> MethodMeta:
        """A method's inputs and outputs as the program declares them, without loading it."""
        name = _name_bytes(method)
        self._check_method(method, "reading the signature of")
        count, m = ffi.new("size_t *"), ffi.new("etnp_value_meta *")
        sides = []
        ptr = self._acquire()
        try:
            for output in (0, 1):
                check(lib.etnp_program_method_num_io(ptr, name, output, count), f"reading the signature of {method!r}")
                metas = []
                for i in range(count[0]):
                    check(lib.etnp_program_method_io_meta(ptr, name, output, i, m),
                          f"reading the signature of {method!r}")
                    metas.append(_meta(m))
                sides.append(tuple(metas))
        finally:
            self._release()
        return MethodMeta(method, sides[0], sides[1])

    def _list(self, fn, method: str, ptr=None) -> List[str]:
        bname = _name_bytes(method)
        if ptr is None:
            ptr = self._acquire()
            try:
                return self._list(fn, method, ptr)
            finally:
                self._release()
        out, i, name = [], 0, ffi.new("const char **")
        while True:
            status = fn(ptr, bname, i, name)
            if status == 5 and i > 0 or (status == 5 and method in self._method_names):
                return out
            check(status, f"listing {method!r}")
            out.append(ffi.string(name[0]).decode())
            i += 1

    def io_names(self, method: str = "forward") -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
        """(input names, output names) of a method: keyword inputs and dict outputs keep the names
        they were exported with, others are ``input_<i>`` / ``output_<i>`` (see named_io)."""
        name, s = _name_bytes(method), ffi.new("const char **")
        ptr = self._acquire()
        try:
            specs = []
            for output in (0, 1):
                check(lib.etnp_program_method_container_meta(ptr, name, output, s), f"reading {method!r}")
                specs.append(ffi.string(s[0]).decode("utf-8", "replace"))
            counts = []
            for output in (0, 1):
                n = ffi.new("size_t *")
                check(lib.etnp_program_method_num_io(ptr, name, output, n), f"reading {method!r}")
                counts.append(n[0])
        finally:
            self._release()
        return named_io.io_names(specs[0], specs[1], counts[0], counts[1])

    def __reduce__(self):
        from .pickling import reduce_program
        return reduce_program(self)

    def close(self) -> None:
        """Release the program (methods already loaded keep working). Calls in progress on other
        threads finish first; later ones raise ExecutionError."""
        with self._use_lock:
            if self._closed:
                return
            self._closed = True
            if self._users:
                return  # the last user releases it
            ptr, self._ptr = self._ptr, None
        ffi.release(ptr)

    def __enter__(self) -> "Program":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return f"Program(methods={list(self._method_names)}, closed)"
        sigs = []
        for name in self._method_names:
            try:
                sigs.append(str(self.signature(name)))
            except ExecuTorchError:
                sigs.append(f"{name}(?)")
        return f"Program({'; '.join(sigs)})"
