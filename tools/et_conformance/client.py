"""The long-lived worker subprocess, seen from the pytest process (no torch here).

One WorkerClient per session. It starts `python worker.py` lazily, sends requests with a
per-call deadline, and restarts the worker after a crash, a hang (killed at the deadline) or
an interrupted call (e.g. pytest-timeout firing mid-read), so a stale reply is never read.
"""

import hashlib
import os
import select
import signal
import subprocess
import tempfile
import time

from . import protocol

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")


class WorkerError(RuntimeError):
    """The runtime raised while loading or running the program (message from the worker)."""


class WorkerCrashed(RuntimeError):
    """The worker died or hung; it is restarted on the next call."""


class WorkerClient:
    def __init__(self, python, call_timeout=120.0, start_timeout=120.0, env=None, log_dir=None):
        self.python = python
        self.call_timeout = call_timeout
        self.start_timeout = start_timeout
        self.env = dict(os.environ if env is None else env)
        self.log_dir = log_dir or tempfile.gettempdir()
        self.proc = None
        self.info = None
        self.log_path = None
        self.sent_sha = None
        self.starts = 0

    # ---- process management -------------------------------------------------------
    def start(self):
        os.makedirs(self.log_dir, exist_ok=True)
        self.starts += 1
        self.log_path = os.path.join(self.log_dir, f"worker-{os.getpid()}-{self.starts}.log")
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [self.python, WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=tempfile.gettempdir(),
            env=self.env,
            start_new_session=True,  # a pytest-timeout SIGALRM/Ctrl-C does not hit it
        )
        log.close()
        self.sent_sha = None
        try:
            header, _ = self._read(0, time.monotonic() + self.start_timeout, "starting")
        except BaseException:
            self.stop()
            raise
        self.info = header
        with open(self.log_path, "a") as f:  # which runtime answered, for the record
            f.write(f"[et_conformance] worker ready: {header}\n")

    def stop(self):
        proc, self.proc = self.proc, None
        self.sent_sha = None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                try:
                    proc.stdin.write(protocol.encode({"op": "quit"}, b"", b""))
                    proc.stdin.flush()
                    proc.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass

    def _log_tail(self, since=0, limit=2000):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                data = f.read()
        except OSError:
            return ""
        text = data.decode("utf-8", "replace").strip()
        return text[-limit:]

    def _log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except (OSError, TypeError):
            return 0

    def _read(self, n_payloads, deadline, what):
        """Read one reply (header + n_payloads frames) before the deadline."""
        fd = self.proc.stdout.fileno()
        buf = bytearray()
        while True:
            frames = protocol.split_frames(buf, 1 + n_payloads)
            if frames is not None:
                import json

                return json.loads(frames[0].decode("utf-8")), frames[1:]
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerCrashed(f"runtime worker timed out while {what} (killed)")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    rc = self.proc.wait(timeout=10)
                    sig = f" (signal {signal.Signals(-rc).name})" if rc < 0 else ""
                    raise WorkerCrashed(f"runtime worker exited with {rc}{sig} while {what}")
                buf += chunk

    # ---- one call -----------------------------------------------------------------------
    def run(self, pte, method, input_specs, input_arrays, cl_input):
        """(output specs, output arrays) from running method of pte in the worker."""
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self.start()
        sha = hashlib.sha256(pte).hexdigest()
        header = {
            "op": "run",
            "method": method,
            "pte_sha": sha,
            "cl_input": cl_input,
            "inputs": input_specs,
        }
        payload = b"" if sha == self.sent_sha else pte
        log_start = self._log_size()
        clean = False
        try:
            try:
                self.proc.stdin.write(
                    protocol.encode(header, payload, protocol.arrays_to_npz(input_arrays))
                )
                self.proc.stdin.flush()
            except BrokenPipeError:
                raise WorkerCrashed("runtime worker closed its input")
            self.sent_sha = sha
            reply, (out_npz,) = self._read(1, time.monotonic() + self.call_timeout, f"running {method!r}")
            clean = True
        except WorkerCrashed as e:
            tail = self._log_tail(log_start)
            self.stop()
            raise WorkerCrashed(f"{e}" + (f"\n--- worker log ---\n{tail}" if tail else "")) from None
        finally:
            if not clean:  # interrupted mid-call: the reply may still come, so never reuse it
                self.stop()
        if not reply.get("ok"):
            tail = self._log_tail(log_start)
            raise WorkerError(
                f"{reply.get('error_type')}: {reply.get('message')}"
                + (f"\n--- worker log ---\n{tail}" if tail else "")
            )
        specs = reply["outputs"]
        arrays = protocol.npz_to_arrays(out_npz, sum(s["kind"] == "tensor" for s in specs))
        return specs, arrays
