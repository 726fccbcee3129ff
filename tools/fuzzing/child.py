"""The child process: runs cases in-process under its own limits and reports one JSON line per
event (``start``, ``end`` with the outcome, ``done``) on the report pipe; and --replay, which runs
one saved input in this process the same way, letting its exception escape."""
from __future__ import annotations

import json
import os
import tempfile
import traceback

from .fault_injection import Injection
from .formats import TARGETS
from .target import acceptable


def _limit(mem_mb: int) -> None:
    """The child's own limits, set first thing in it (not in a preexec_fn: Python code between
    fork and exec can deadlock when the parent has threads - numpy's OpenBLAS pool - and did, as
    a hang before the first case)."""
    import resource
    if mem_mb > 0:
        b = mem_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (b, b))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))



def child_main(args) -> int:
    _limit(args.mem_mb)
    import faulthandler
    faulthandler.enable()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import executorch_numpy_runtime  # noqa: F401  (import errors: before the first case)
    report = os.fdopen(args.report_fd, "w", buffering=1)
    # what the first case would import or create lazily (ml_dtypes takes seconds on a loaded
    # machine): before the watchdog counts
    from executorch_numpy_runtime import Runtime, dtypes
    Runtime.get()
    dtypes._bfloat16()
    injection = Injection(args.inject)
    injection.install()
    targets = {f: TARGETS[f]() for f in args.formats}
    start = {f: s for f, s in zip(args.formats, args.start)}
    tmp = tempfile.mkdtemp(prefix="etnp-fuzz-")
    # round robin over the formats, each from its own next case index
    todo = [f for f in args.formats if start[f] < args.max_cases]
    while todo:
        for fmt in list(todo):
            case = start[fmt]
            start[fmt] += 1
            if start[fmt] >= args.max_cases:
                todo.remove(fmt)
            t = targets[fmt]
            data = t.generate(args.seed, case)
            injection.case = case
            report.write(json.dumps({"ev": "start", "fmt": fmt, "case": case}) + "\n")
            outcome, detail = "ok", ""
            try:
                detail = t.run(data, case, tmp)
            except MemoryError as e:
                outcome, detail = "finding", _tb(e)
            except Exception as e:
                if acceptable(e):
                    outcome, detail = "rejected", f"{type(e).__name__}: {str(e)[:200]}"
                else:
                    outcome, detail = "finding", _tb(e)
            report.write(json.dumps({"ev": "end", "fmt": fmt, "case": case, "outcome": outcome,
                                     "detail": detail}) + "\n")
    report.write(json.dumps({"ev": "done"}) + "\n")
    return 0


def _tb(e: BaseException) -> str:
    return "".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:]


def replay_main(args) -> int:
    """Runs one saved input in this process (what the child did), letting exceptions escape."""
    import executorch_numpy_runtime  # noqa: F401
    fmt, path = args.replay
    t = TARGETS[fmt]()
    with open(path, "rb") as f:
        data = f.read()
    tmp = tempfile.mkdtemp(prefix="etnp-replay-")
    print(t.run(data, args.case, tmp))
    return 0

