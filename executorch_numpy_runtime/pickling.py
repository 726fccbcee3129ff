"""Pickling programs and methods (for process pools, Ray, Dask).

A pickled Program carries how to load it again, not the native state: its path (and ``mmap``)
when it was loaded from a path, else its bytes (read back from the core, which holds them: no
second copy is kept in Python), plus its .ptd data files (paths, or their bytes). The receiving
process loads it on its ``Runtime.get()``. A pickled Method is its program and its name.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from ._native import check, ffi, lib


def _program_bytes(prog: Any) -> bytes:
    data, size = ffi.new("const void **"), ffi.new("size_t *")
    ptr = prog._acquire()
    try:
        check(lib.etnp_program_data(ptr, data, size), "reading the program's bytes")
        return bytes(ffi.buffer(ffi.cast("const char *", data[0]), size[0]))
    finally:
        prog._release()


def reduce_program(prog: Any) -> Tuple[Any, Tuple[Any, ...]]:
    origin: Optional[Tuple[str, bool]] = prog._origin
    if origin is not None:
        return load_program, (origin[0], None, origin[1], tuple(prog._data_sources), prog._weight_cache)
    return load_program, (None, _program_bytes(prog), False, tuple(prog._data_sources), prog._weight_cache)


def load_program(path: Optional[str], data: Optional[bytes], mmap: bool, data_files: Sequence[Any],
                 weight_cache: Optional[str] = None) -> Any:
    from .runtime import Runtime

    rt = Runtime.get()
    return rt.load_program(path if path is not None else data, data_files=list(data_files) or None, mmap=mmap,
                           weight_cache=weight_cache)


def reduce_method(method: Any) -> Tuple[Any, Tuple[Any, ...]]:
    return load_method, (method.program, method.name)


def load_method(program: Any, name: str) -> Any:
    return program.load_method(name)
