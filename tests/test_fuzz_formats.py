"""Bounded, deterministic runs of tools/fuzz_python.py (issue #30): mutated .bpte, .ptd and .npz
inputs must end in success or a documented error, never another exception, a crash or a hang.

Each run is a subprocess (the fuzzer itself runs its cases in a child under RLIMIT_AS with a
watchdog); a few hundred cases per format, seed 1, a few seconds each. The fuzzer's own checks are
tested too: deliberately injected bugs (an IndexError escaping bundled.parse, a crash, hangs) must
be reported as findings with their reproducers.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZER = os.path.join(ROOT, "tools", "fuzz_python.py")
MODELS = os.path.join(ROOT, "tests", "models")
CASES = 250  # per format: a few seconds each on a slow machine

def fuzz(tmp_path, *args, timeout=600):
    # bounded by --max-cases only (no --seconds: a loaded machine still runs every case), with a
    # generous per-case watchdog; the subprocess timeout is the last resort
    # (the children import the package this test imported, not whichever one is installed)
    import executorch_numpy_runtime
    pkg_root = os.path.dirname(os.path.dirname(executorch_numpy_runtime.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (pkg_root, os.environ.get("PYTHONPATH")))))
    out = tmp_path / "fuzz"
    cmd = [sys.executable, FUZZER, "--seed", "1", "--seconds", "0", "--case-timeout", "60", "--out", str(out), *args]
    # its own process group: past the timeout, the fuzzer and its child (which may be hung) go together
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                          start_new_session=True) as p:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise
    r = subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr)
    findings = [line.split("FINDING ", 1)[1] for line in r.stdout.splitlines() if "FINDING " in line]
    return r, findings, out


@pytest.mark.parametrize("fmt", ["bpte", "ptd"])
def test_fuzz_no_findings(tmp_path, fmt):
    r, findings, _ = fuzz(tmp_path, "--formats", fmt, "--max-cases", str(CASES))
    assert findings == [] and r.returncode == 0, r.stdout + r.stderr
    m = re.search(rf"{fmt}: (\d+) cases \((\d+) ok, (\d+) rejected", r.stdout)
    assert m and int(m.group(1)) == CASES, r.stdout
    assert int(m.group(2)) > 0 and int(m.group(3)) > 0, r.stdout  # both outcomes reached


def test_fuzz_npz_no_findings(tmp_path):
    # (this run found npz_inputs letting tokenize.TokenError / RuntimeError / NotImplementedError
    # escape from corrupt archives until they became InputsError: see test_cli_run_rejects_bad_npz)
    r, findings, _ = fuzz(tmp_path, "--formats", "npz", "--max-cases", str(CASES))
    assert findings == [] and r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"npz: (\d+) cases \((\d+) ok, (\d+) rejected", r.stdout)
    assert m and int(m.group(1)) == CASES and int(m.group(2)) > 0 and int(m.group(3)) > 0, r.stdout


def test_fuzzer_reports_an_escaping_exception(tmp_path):
    # bundled.parse made to raise IndexError on some inputs, in the fuzzer's child only
    r, findings, out = fuzz(tmp_path, "--formats", "bpte", "--max-cases", "40", "--inject", "bpte-indexerror")
    assert r.returncode == 1, r.stdout + r.stderr
    assert findings and all("IndexError: injected" in f for f in findings), r.stdout
    saved = sorted(p.name for p in out.iterdir() if p.name.startswith("finding-bpte-"))
    assert any(n.endswith(".bpte") for n in saved) and any(n.endswith(".txt") for n in saved), saved


# A case hangs when it uses --case-timeout seconds of CPU time or none for --case-timeout seconds
# (tools/fuzzing/case_clock.py): a slow case on a loaded machine is neither. Without /proc the
# fuzzer can only count wall time: there, a limit far above a real case's time on a loaded machine.
HANG_LIMIT = 5 if os.path.exists(f"/proc/{os.getpid()}/stat") else 40


def run_budget(cases, faults):
    """The longest a run may take on a loaded machine (a quarter of a core): a child's start per
    fault and one more (imports, warm-up), each case, and each hang's limit (a busy one's CPU time
    at a quarter of a core)."""
    return 60 * (faults + 1) + 5 * cases + 4 * HANG_LIMIT * faults


def test_fuzzer_survives_crashes_and_hangs(tmp_path):
    # one run, a fault at each of three chosen cases: a crash (SIGSEGV), a hang that sleeps (no CPU
    # time) and one that spins (CPU time); each ends its child, and a new child goes on at the
    # next case, so that every case is counted and only the chosen ones are findings
    faults = {0: "crash", 3: "hang", 7: "spin"}
    inject = ",".join(f"bpte-{kind}@{case}" for case, kind in faults.items())
    r, findings, out = fuzz(tmp_path, "--formats", "bpte", "--max-cases", "8", "--inject", inject,
                            "--case-timeout", str(HANG_LIMIT), timeout=run_budget(8, len(faults)))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "bpte: 8 cases" in r.stdout and "3 findings" in r.stdout, r.stdout + r.stderr
    if HANG_LIMIT == 5:
        stalled, busy = "hang (stalled: no CPU time for 5 s)", "hang (busy: over 5 s of CPU time)"
    else:
        stalled = busy = "hang (no result in 40 s)"
    expected = {0: "crash (signal SIGSEGV)", 3: stalled, 7: busy}
    got = {}
    for f in findings:
        m = re.match(r"bpte case (\d+): (.*) -> (.*)$", f)
        assert m, f
        got[int(m.group(1))] = m.group(2)
        assert os.path.isfile(m.group(3)), f  # the reproducer
    assert got == expected, r.stdout + r.stderr


def test_fuzz_is_deterministic():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import fuzz_python
    finally:
        sys.path.pop(0)
    for name, cls in fuzz_python.TARGETS.items():
        a, b = cls(), cls()
        assert [a.generate(7, i) for i in range(20)] == [b.generate(7, i) for i in range(20)], name


# ---- npz_inputs: one reproducer per exception that escaped it (fixed) ----------------------------

def _npz(member: bytes, flag: int = 0, method: int = 0) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("forward:in:0.npy", (1980, 1, 1, 0, 0, 0)), member)
    b = bytearray(buf.getvalue())
    for sig, flag_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        i = b.index(sig)
        if flag:
            b[i + flag_at:i + flag_at + 2] = struct.pack("<H", flag)
        if method:
            b[i + method_at:i + method_at + 2] = struct.pack("<H", method)
    return bytes(b)


def _mlp_npy() -> bytes:
    with np.load(os.path.join(MODELS, "mlp.npz")) as z:
        x = z["forward:in:0"]
    buf = io.BytesIO()
    np.save(buf, x)
    return buf.getvalue()


NPZ_BUG_CASES = {
    # a v1.0 .npy header "{": numpy's literal_eval fails, its Python 2 header filter raises tokenize.TokenError
    "npy-header-tokenize-error": lambda: _npz(b"\x93NUMPY\x01\x00\x01\x00{"),
    # the member's encryption flag set: zipfile raises RuntimeError (password required)
    "zip-member-encrypted": lambda: _npz(_mlp_npy(), flag=1),
    # compression method 99 (AES): zipfile raises NotImplementedError
    "zip-unknown-compression": lambda: _npz(_mlp_npy(), method=99),
}


# found by tools/fuzz_python.py: npz_inputs let these escape as tracebacks (fixed)
@pytest.mark.parametrize("case", sorted(NPZ_BUG_CASES))
def test_cli_run_rejects_bad_npz(tmp_path, case):
    from executorch_numpy_runtime import cli
    path = tmp_path / "in.npz"
    path.write_bytes(NPZ_BUG_CASES[case]())
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = cli.main(["run", os.path.join(MODELS, "mlp.pte"), "--inputs", str(path), "--out", str(tmp_path / "o.npz")])
    assert rc == 1 and "error:" in err.getvalue()


# ---- bundled.parse: shared tables multiply (found while writing the fuzzer) --------------------

def _shared_tables_bpte(n: int) -> bytes:
    """mlp_bundled.bpte with its suites vector replaced by n references to one suite, whose
    test_cases vector holds n references to one case, whose inputs and outputs vectors hold n
    references to one Int value: ~16 n bytes more, n**3 inputs and n**3 outputs to parse."""
    from executorch_numpy_runtime import bundled
    with open(os.path.join(MODELS, "mlp_bundled.bpte"), "rb") as f:
        d = bytearray(f.read())
    r = bundled._Reader(bytes(d))
    suites_field = r.field(r.u32(0), 1)

    def put(b: bytes) -> int:
        d.extend(b"\0" * (-len(d) % 8))
        d.extend(b)
        return len(d) - len(b)

    vt_suite, vt_case, vt_value = (put(struct.pack("<HHHH", 8, 12, 4, 8)) for _ in range(3))
    vt_int = put(struct.pack("<HHH", 6, 12, 4))
    suites, suite = put(bytes(4 + 4 * n)), put(bytes(12))
    name = put(struct.pack("<I", 7) + b"forward\0")
    cases, case = put(bytes(4 + 4 * n)), put(bytes(12))
    ins, outs, value, int_ = put(bytes(4 + 4 * n)), put(bytes(4 + 4 * n)), put(bytes(12)), put(bytes(12))

    def ref(at: int, target: int) -> None:
        struct.pack_into("<I", d, at, target - at)

    def vec(at: int, target: int) -> None:
        struct.pack_into("<I", d, at, n)
        for k in range(n):
            ref(at + 4 + 4 * k, target)

    ref(suites_field, suites)
    vec(suites, suite), vec(cases, case), vec(ins, value), vec(outs, value)
    for table, vt in ((suite, vt_suite), (case, vt_case), (value, vt_value), (int_, vt_int)):
        struct.pack_into("<i", d, table, table - vt)
    ref(suite + 4, name), ref(suite + 8, cases)
    ref(case + 4, ins), ref(case + 8, outs)
    d[value + 4] = 2  # an Int
    ref(value + 8, int_)
    struct.pack_into("<q", d, int_ + 4, 7)
    return bytes(d)


# found while writing the fuzzer: a 3.6 KB .bpte made 54,000 values (n**3 from O(n) bytes; a 9 KB
# one would have taken ~30 minutes and GBs); bundled.parse now refuses tables referenced twice
def test_bundled_parse_does_not_multiply_shared_tables():
    from executorch_numpy_runtime import ProgramLoadError, Runtime, bundled
    data = _shared_tables_bpte(30)
    with pytest.raises(ProgramLoadError, match="referenced more than once"):
        bundled.parse(data)
    with pytest.raises(ProgramLoadError, match="referenced more than once"):
        Runtime.get().load_program(data)
    with open(os.path.join(MODELS, "mlp_bundled.bpte"), "rb") as f:
        assert bundled.parse(f.read()).suites  # a real one still parses
