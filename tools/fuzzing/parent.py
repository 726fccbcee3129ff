"""The parent process: starts children (tools/fuzz_python.py --child) under RLIMIT_AS, reads their
reports, watches each case (case_clock.CaseClock), and after a crash or a hang saves the
reproducer and starts a new child at the next case."""
from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

from .case_clock import CaseClock
from .formats import EXT, TARGETS
from .target import ROOT

FUZZ_SCRIPT = os.path.join(ROOT, "tools", "fuzz_python.py")
STARTUP_SECONDS = 300  # a child's imports and warm-up before its first case, on a very loaded machine


class ReportPipe:
    """The child's report pipe, read unbuffered: every complete line is handed out before the next
    wait. (A buffered reader behind select() kept lines it had read but not returned: on a loaded
    machine the `start` line of a case that then hung was one of them, so the hang went unseen and
    the run ended as a child stalled between cases.)"""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf, self.eof = fd, b"", False

    def events(self, wait: float) -> List[dict]:
        """The events complete now, else those that arrive within `wait` seconds (maybe none)."""
        if b"\n" not in self.buf and not self.eof:
            ready, _, _ = select.select([self.fd], [], [], wait)
            if ready:
                chunk = os.read(self.fd, 1 << 16)
                self.eof = not chunk
                self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        if self.eof:
            self.buf = b""  # a line cut short by the child's death: no event
        return [json.loads(line) for line in lines if line.strip()]

    def close(self) -> None:
        os.close(self.fd)


def _save(out: str, fmt: str, seed: int, case: int, kind: str, detail: str, data: bytes) -> str:
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, f"{kind}-{fmt}-seed{seed}-case{case}")
    with open(base + EXT[fmt], "wb") as f:
        f.write(data)
    with open(base + ".txt", "w") as f:
        f.write(f"format {fmt}, seed {seed}, case {case}: {kind}\n"
                f"replay: python tools/fuzz_python.py --replay {fmt} {base + EXT[fmt]} --case {case}\n\n{detail}\n")
    return base + EXT[fmt]


def _log_tail(log_path: str) -> str:
    with contextlib.suppress(OSError), open(log_path, "rb") as f:
        f.seek(0, 2)
        f.seek(max(0, f.tell() - 3000))
        return f.read().decode("utf-8", "replace")
    return ""


def parent_main(args) -> int:
    t0 = time.monotonic()
    deadline = t0 + args.seconds if args.seconds > 0 else float("inf")
    stats = {f: {"cases": 0, "ok": 0, "rejected": 0, "findings": 0} for f in args.formats}
    findings: List[str] = []
    nxt = {f: 0 for f in args.formats}
    generators = {f: TARGETS[f]() for f in args.formats}
    os.makedirs(args.out, exist_ok=True)
    log_path = os.path.join(args.out, "child-stderr.log")
    stopped_early = False

    def lost(fmt: str, case: int, kind: str, why: str, detail: str) -> None:
        """Case CASE of FMT ended its child (a crash or a hang): a finding; the next child goes on after it."""
        data = generators[fmt].generate(args.seed, case)
        path = _save(args.out, fmt, args.seed, case, kind, detail, data)
        stats[fmt]["cases"] += 1
        stats[fmt]["findings"] += 1
        findings.append(f"{fmt} case {case}: {kind} ({why}) -> {path}")
        nxt[fmt] = case + 1

    while any(nxt[f] < args.max_cases for f in args.formats) and time.monotonic() < deadline:
        rfd, wfd = os.pipe()
        cmd = [sys.executable, FUZZ_SCRIPT, "--child", "--report-fd", str(wfd),
               "--mem-mb", str(args.mem_mb), "--seed", str(args.seed), "--max-cases", str(args.max_cases),
               "--formats", ",".join(args.formats), "--start", ",".join(str(nxt[f]) for f in args.formats)]
        if args.inject:
            cmd += ["--inject", args.inject]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
        with open(log_path, "ab") as log:
            child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(wfd,),
                                     env=env, cwd=ROOT)
        os.close(wfd)
        pipe = ReportPipe(rfd)
        current: Optional[Tuple[str, int]] = None
        clock: Optional[CaseClock] = None
        last_event = time.monotonic()
        finished = False
        while True:
            for ev in pipe.events(min(0.25, max(0.01, deadline - time.monotonic()))):
                last_event = time.monotonic()
                if ev["ev"] == "start":
                    current = (ev["fmt"], ev["case"])
                    clock = CaseClock(child.pid, args.case_timeout)
                elif ev["ev"] == "end":
                    fmt, case = ev["fmt"], ev["case"]
                    st = stats[fmt]
                    st["cases"] += 1
                    st[{"ok": "ok", "rejected": "rejected", "finding": "findings"}[ev["outcome"]]] += 1
                    if ev["outcome"] == "finding":
                        data = generators[fmt].generate(args.seed, case)
                        path = _save(args.out, fmt, args.seed, case, "finding", ev["detail"], data)
                        last = ev["detail"].strip().splitlines()[-1] if ev["detail"].strip() else "?"
                        findings.append(f"{fmt} case {case}: {last} -> {path}")
                    nxt[fmt] = case + 1
                    current, clock = None, None
                    if args.verbose:
                        print(f"{fmt} {case}: {ev['outcome']} {ev['detail'][:150]!r}")
                elif ev["ev"] == "done":
                    finished = True
                    for f in args.formats:
                        nxt[f] = max(nxt[f], args.max_cases)
            if pipe.eof:  # the child exited (every line it wrote handled above)
                rc = child.wait()
                if current is not None:
                    sig = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
                    lost(*current, "crash", sig, f"child died: {sig}\n\n{_log_tail(log_path)}")
                elif not finished:
                    print(f"fuzz_python: the child exited ({rc}) before any case; see {log_path}", file=sys.stderr)
                    return 2
                break
            why = clock.verdict() if clock is not None else None
            if why is not None:
                child.kill()
                child.wait()
                lost(*current, "hang", why, why)
                break
            now = time.monotonic()
            if current is None and not finished and now - last_event > args.case_timeout + STARTUP_SECONDS:
                child.kill()
                child.wait()
                print(f"fuzz_python: the child gave no result within {args.case_timeout + STARTUP_SECONDS:.0f} s "
                      f"of starting or of its last case (stalled between cases); see {log_path}", file=sys.stderr)
                return 2
            if now >= deadline:
                child.kill()
                child.wait()
                stopped_early = True
                break
        pipe.close()
        if child.poll() is None:
            child.kill()
            child.wait()
    return _summary(args, stats, findings, time.monotonic() - t0, stopped_early)


def _summary(args, stats: Dict[str, Dict[str, int]], findings: List[str], elapsed: float, stopped_early: bool) -> int:
    """Prints the run's counts and findings; the exit status (1 when a finding is not --known)."""
    print(f"fuzz_python: seed {args.seed}, {elapsed:.1f} s{' (time limit reached)' if stopped_early else ''}")
    for f in args.formats:
        st = stats[f]
        print(f"  {f}: {st['cases']} cases ({st['ok']} ok, {st['rejected']} rejected with a documented error), "
              f"{st['findings']} findings")
    for line in findings:
        print(f"  FINDING {line}")
    total = sum(st["cases"] for st in stats.values())
    known = [f for f in findings if args.known and re.search(args.known, f)]
    print(f"fuzz_python: {total} cases, {len(findings)} findings"
          + (f" ({len(known)} of a known bug: --known {args.known!r})" if args.known else ""))
    return 1 if len(findings) > len(known) else 0
