"""Reading files whole, safely: regular files only, and never more than their size.

A device (``/dev/zero``), a FIFO or a directory given where a file is expected would otherwise be
read until memory runs out, or block forever; a file that changes while it is read would give a
torn copy. Every failure raises ``FileError`` (an ``OSError``) with one line that names the file::

    data = read_regular_file(path, "bundled program", limit=1 << 32)

``check_regular_file`` only checks; ``open_regular_file`` opens for reading (for readers that
seek, such as ``zipfile``), without blocking on a FIFO that appears between check and open.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO, Union

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

_KINDS = ((stat.S_ISDIR, "is a directory"), (stat.S_ISFIFO, "is not a regular file (a FIFO)"),
          (stat.S_ISCHR, "is not a regular file (a character device)"),
          (stat.S_ISBLK, "is not a regular file (a block device)"),
          (stat.S_ISSOCK, "is not a regular file (a socket)"))


class FileError(OSError):
    """A file that cannot be read whole: missing or unreadable, not a regular file (directory,
    device, FIFO, socket), larger than allowed, or changed while it was read. ``str(e)`` is one
    line naming the file; ``errno`` is set where the OS gave one."""


def _name(path: PathLike) -> str:
    p = os.fspath(path)
    return os.fsdecode(p) if isinstance(p, bytes) else p


def _os_error(what: str, path: PathLike, e: OSError) -> FileError:
    err = FileError(f"{what} {_name(path)}: {e.strerror or e}")
    err.errno = e.errno  # (setting filename would make str(err) "[Errno N] ...")
    return err


def _check_mode(st: os.stat_result, what: str, path: PathLike) -> None:
    if stat.S_ISREG(st.st_mode):
        return
    why = next((text for test, text in _KINDS if test(st.st_mode)), "is not a regular file")
    err = FileError(f"{what} {_name(path)} {why}")
    err.errno = errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL
    raise err


def check_regular_file(path: PathLike, what: str) -> os.stat_result:
    """The ``os.stat`` of PATH (symlinks followed) when it is a regular file; else ``FileError``
    ("WHAT PATH is a directory", "... is not a regular file (a FIFO)", "...: No such file or
    directory"). Opens nothing, so a FIFO nobody writes to cannot block it."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise _os_error(what, path, e) from None
    except ValueError as e:  # an embedded NUL character
        raise FileError(f"{what} {_name(path)!r}: {e}") from None
    _check_mode(st, what, path)
    return st


def open_regular_file(path: PathLike, what: str) -> BinaryIO:
    """PATH opened for binary reading (buffered), after checking that it is a regular file. The
    open does not block on a FIFO put there after the check; the opened file is checked again."""
    check_regular_file(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise _os_error(what, path, e) from None
    try:
        _check_mode(os.fstat(fd), what, path)  # O_NONBLOCK does nothing to a regular file
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_file(path: PathLike, what: str, limit: int) -> bytes:
    """The whole content of the regular file PATH, at most ``limit`` bytes.

    ``what`` names the file in messages ("bundled program", "--inputs"). Raises ``FileError``
    when PATH is missing or unreadable, is not a regular file (nothing is read from a device,
    FIFO or directory), is larger than ``limit`` bytes, or changes size while it is read (reads
    stop one byte past the size ``fstat`` gave: a file that grows is never read to its end; a
    size or modification time that differs after the read counts as a change too)."""
    with open_regular_file(path, what) as fh:
        before = os.fstat(fh.fileno())
        size = before.st_size
        if size > limit:
            raise FileError(f"{what} {_name(path)} is {size} bytes, more than the {limit} bytes allowed")
        try:
            data = fh.read(size + 1)
            after = os.fstat(fh.fileno())
        except OSError as e:
            raise _os_error(what, path, e) from None
    if len(data) != size or (after.st_size, after.st_mtime_ns) != (size, before.st_mtime_ns):
        raise FileError(f"{what} {_name(path)} changed while it was read "
                        f"({size} bytes when opened, {'more' if len(data) > size else len(data)} read)")
    return data
