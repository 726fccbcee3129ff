"""What ``load_program`` accepts, made into a path or a buffer for the core.

A program source is a path (str / os.PathLike), a bytes-like object (bytes, bytearray,
memoryview, ``mmap.mmap``: copied), or a binary file object (read to its end). A bundled
program (.bpte, identifier BP08) stands for the program it bundles.
"""
from __future__ import annotations

import io
import mmap as _mmap
import os
from typing import Any, Tuple, Union

from . import bundled
from .errors import ProgramLoadError

BUFFER_TYPES = (bytes, bytearray, memoryview, _mmap.mmap)


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
        try:
            with open(path, "rb") as fh:
                head = fh.read(8)
                if bundled.is_bundled(head):
                    fh.seek(0)
                    return "buffer", bundled.parse(fh.read()).program
        except (OSError, ValueError):
            pass  # the core reports unreadable paths with its own message
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
