"""Access to the compiled core (cffi, API mode) and its error reporting."""
from __future__ import annotations

from .errors import error_for

from ._etnp import ffi, lib  # noqa: E402  (compiled by build_ffi.py)


def _string(p) -> str:
    return ffi.string(p).decode("utf-8", "replace") if p != ffi.NULL else ""


def check(status: int, context: str = "") -> None:
    """Raise the exception for a failing etnp status code."""
    if status == 0:
        return
    msg = _string(lib.etnp_last_error_message())
    detail = _string(lib.etnp_last_error_detail())
    raise error_for(status, f"{context}: {msg}" if context else msg, detail)


def names(count_fn, name_fn) -> list:
    return [_string(name_fn(i)) for i in range(count_fn())]
