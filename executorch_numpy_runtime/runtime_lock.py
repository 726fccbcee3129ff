"""The Runtime's lock: method calls and loads through one Runtime are serialised by it, and a
Python operator (custom_ops) running inside a call must not take it again on its own thread
(that would deadlock): such a use raises ExecutionError instead."""
from __future__ import annotations

from typing import Any

from . import custom_ops
from .errors import ExecutionError


def _check_not_inside_op(lock: Any, what: str) -> None:
    if custom_ops._tls.lock is lock:
        raise ExecutionError(f"cannot {what} from a Python operator running on the same Runtime "
                             "(use another Runtime inside operators)")


class _holding:
    """``with _holding(runtime_lock, what):`` takes the Runtime's lock, refusing (instead of
    deadlocking) when this thread is inside a Python operator called by that Runtime."""

    __slots__ = ("lock",)

    def __init__(self, lock: Any, what: str):
        _check_not_inside_op(lock, what)
        self.lock = lock

    def __enter__(self) -> None:
        self.lock.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()
