"""When a case is a hang: measured in the child's CPU time, so that a loaded machine does not make
a slow case look hung.

A case is hung when it has used more than LIMIT seconds of CPU time (busy: a loop that never
ends), or when its process has used no CPU time at all for LIMIT seconds (stalled: a deadlock, a
sleep). A case that is only slow because the machine is busy still gets CPU time - a share of it,
every scheduler period - so neither rule fires however long it takes by the wall clock. The CPU
time is the child's (all its threads), read from /proc/PID/stat; where that cannot be read
(systems without /proc) the rule is the wall clock's: no result within LIMIT seconds.
"""
from __future__ import annotations

import os
import time
from typing import Optional

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") and "SC_CLK_TCK" in os.sysconf_names else 100


def cpu_seconds(pid: int) -> Optional[float]:
    """The process's user + system CPU time in seconds, or None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # after "(comm)": state is field 3, utime field 14, stime field 15
        fields = stat[stat.rindex(b")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, ValueError, IndexError):
        return None


class CaseClock:
    """The clock of one case of the child PID, started when the parent learns that it began."""

    def __init__(self, pid: int, limit: float) -> None:
        self.pid, self.limit = pid, limit
        self.started = self.moved = time.monotonic()
        self.cpu0 = self.cpu = cpu_seconds(pid)

    def verdict(self) -> Optional[str]:
        """None while the case may still end; else why it is a hang."""
        now = time.monotonic()
        cpu = cpu_seconds(self.pid) if self.cpu0 is not None else None
        if cpu is None:
            return f"no result in {self.limit:g} s" if now - self.started > self.limit else None
        if cpu > self.cpu:
            self.cpu, self.moved = cpu, now
        if cpu - self.cpu0 > self.limit:
            return f"busy: over {self.limit:g} s of CPU time"
        if now - self.moved > self.limit:
            return f"stalled: no CPU time for {self.limit:g} s"
        return None
