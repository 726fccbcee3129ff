"""What ``load_program`` accepts, made into a path or a buffer for the core.

A program source is a path (str / os.PathLike), a bytes-like object (bytes, bytearray,
memoryview, ``mmap.mmap``: copied), or a binary file object (read to its end). A bundled
program (.bpte, identifier BP08) stands for the program it bundles.
"""
from __future__ import annotations

import io
import mmap as _mmap
import os
from typing import Any, List, Tuple, Union

from . import bundled, files
from .errors import ProgramLoadError

BUFFER_TYPES = (bytes, bytearray, memoryview, _mmap.mmap)
MAX_FILE_BYTES = 1 << 40  # a bound on whole-file reads (their size is checked before reading)


def data_file(source: Any) -> Tuple[str, Any]:
    """(label, bytes) of a .ptd data file given as a path or bytes-like object."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fsdecode(source)
        try:
            return repr(os.path.basename(path)), files.read_regular_file(path, "the file", MAX_FILE_BYTES)
        except files.FileError as e:
            raise ProgramLoadError(f"cannot read data file {path!r}: {e}") from None
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "<bytes>", bytes(source)
    raise TypeError(f"data_files items must be paths or bytes-like objects, not {type(source).__name__}")


def data_file_list(data_files: Any, data_path: Any) -> List[Any]:
    """``data_files`` as a list: one path or bytes-like object stands for itself (a str is not a
    sequence of paths), a list or tuple for its items; ``data_path`` (ExecuTorch's name) adds one."""
    if data_files is None:
        items: List[Any] = []
    elif isinstance(data_files, (str, os.PathLike, bytes, bytearray, memoryview)):
        items = [data_files]
    elif isinstance(data_files, (list, tuple)):
        items = list(data_files)
    else:
        raise TypeError("data_files takes a path, a bytes-like object or a list of them, "
                        f"not {type(data_files).__name__}")
    if data_path is not None:
        items.append(data_path)
    return items


def _as_buffer(data: Any) -> Any:
    if isinstance(data, memoryview):
        return data.cast("B") if data.format != "B" or data.ndim != 1 else data
    return data


def _head(buf: Any) -> bytes:
    return bytes(memoryview(buf).cast("B")[:8]) if len(buf) >= 8 else b""


def normalize(source: Any, mmap: bool) -> Tuple[str, Union[bytes, Any]]:
    """("path", fs-encoded path) or ("buffer", bytes-like) for the core."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fsencode(source)
        if b"\0" in path:
            raise ValueError("embedded null byte in the program path")
        shown = repr(os.fsdecode(path))
        try:
            with files.open_regular_file(path, "the file") as fh:  # never blocks on a FIFO
                head = fh.read(8)
        except files.FileError as e:
            if not os.path.exists(path) or os.path.isdir(path):
                return "path", path  # the core's own messages (missing file, a directory)
            raise ProgramLoadError(f"loading {shown}: {e}") from None
        if bundled.is_bundled(head):
            if mmap:
                raise ValueError(f"{shown} is a bundled program (.bpte): mmap=True maps .pte files only; "
                                 "load it without mmap=True (its program is copied out of the bundle)")
            try:
                data = files.read_regular_file(path, "the bundled program", MAX_FILE_BYTES)
            except files.FileError as e:
                raise ProgramLoadError(f"loading {shown}: {e}") from None
            return "buffer", bundled.parse(data).program
        return "path", path
    if mmap:
        raise ValueError("mmap=True needs a path, not bytes")
    if isinstance(source, BUFFER_TYPES):
        buf = _as_buffer(source)
    elif hasattr(source, "read"):
        if isinstance(source, io.TextIOBase):
            raise TypeError("load_program() needs a file object opened in binary mode ('rb')")
        try:
            buf = source.read()
        except OSError as e:
            raise ProgramLoadError(f"cannot read the program file object: {e.strerror or e}") from None
        if isinstance(buf, str):
            raise TypeError("load_program() needs a file object opened in binary mode ('rb')")
        if not isinstance(buf, BUFFER_TYPES):
            raise TypeError(f"the file object's read() returned {type(buf).__name__}, not bytes")
        buf = _as_buffer(buf)
    else:
        raise TypeError("load_program() takes a path, a bytes-like object (bytes, bytearray, memoryview, mmap) "
                        f"or a binary file object, not {type(source).__name__}")
    if bundled.is_bundled(_head(buf)):
        return "buffer", bundled.parse(buf).program
    return "buffer", buf


def weight_cache_path(weight_cache: Any, kind: str, source: Any) -> Any:
    """The weight cache file load_program(..., weight_cache=...) names: None (no cache), a path,
    or True: ``<program path>.etnpwc``, or in ``$ETNP_WEIGHT_CACHE_DIR`` (when set) the program's
    file name, a hash of its absolute path (two programs of one name in different folders) and
    ``.etnpwc``. True needs a program given by path."""
    if weight_cache is None or weight_cache is False:
        return None
    if weight_cache is True:
        if kind != "path":
            raise ValueError("weight_cache=True needs a program path: give the cache file's path instead")
        program = os.path.abspath(os.fsdecode(os.fspath(source)))
        folder = os.environ.get("ETNP_WEIGHT_CACHE_DIR")
        if not folder:
            return program + ".etnpwc"
        import hashlib
        tag = hashlib.sha256(os.fsencode(program)).hexdigest()[:12]
        return os.path.join(folder, f"{os.path.basename(program)}.{tag}.etnpwc")
    if isinstance(weight_cache, (str, bytes, os.PathLike)):
        return os.fsdecode(os.fspath(weight_cache))
    raise TypeError(f"weight_cache must be a bool or a path, not {type(weight_cache).__name__}")
