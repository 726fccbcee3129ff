"""A one-line progress bar for the CLI (on a terminal only): count, rate and ETA. Messages
printed through ``note`` clear the bar first and redraw it after, so they are never overwritten."""
from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total: int, stream: Optional[TextIO] = None, width: int = 30,
                 enabled: Optional[bool] = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.width = width
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.done = 0
        self.start = time.perf_counter()
        self._shown = False

    def line(self) -> str:
        elapsed = time.perf_counter() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        k = self.width * self.done // max(self.total, 1)
        eta = (self.total - self.done) / rate if rate > 0 else None
        return (f"[{'#' * k}{'.' * (self.width - k)}] {self.done}/{self.total} "
                f"{rate:.1f} it/s ETA {_clock(eta) if eta is not None else '--:--'}")

    def _clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self._shown = False

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        self._clear()
        self.stream.write(self.line())
        self._shown = True
        if done >= self.total:
            self.stream.write("\n")
            self._shown = False
        self.stream.flush()

    def note(self, message: str) -> None:
        """Prints MESSAGE on its own line (stderr), above the bar."""
        self._clear()
        self.stream.write(message + "\n")
        if self.enabled and 0 < self.done < self.total:
            self.stream.write(self.line())
            self._shown = True
        self.stream.flush()
