"""USDT probes (provider etnp, native/src/os/probes.h): the built extension carries them, and one fires."""
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time

import pytest

import executorch_numpy_runtime._native as native

from conftest import model_path

EXT = os.path.abspath(sys.modules["executorch_numpy_runtime._etnp"].__file__)

# Every probe the README documents.
PROBES = ("program_load_begin", "program_load_end", "method_load_begin", "method_load_end",
          "method_execute_begin", "method_execute_end", "instruction_begin", "instruction_end",
          "xnn_node_begin", "xnn_node_end", "error")
# The per-instruction and per-node probes are behind a semaphore.
WITH_SEMAPHORE = ("instruction_begin", "instruction_end", "xnn_node_begin", "xnn_node_end")


def _sdt_header_found():
    """Whether the C++ compiler that builds the extension finds <sys/sdt.h> (then the build has probes)."""
    cxx = (sysconfig.get_config_var("CXX") or "c++").split()[0]
    if not shutil.which(cxx):
        cxx = "c++"
    try:
        r = subprocess.run([cxx, "-E", "-x", "c++", "-"], input=b"#include <sys/sdt.h>\n",
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


def _needs_probes():
    if not sys.platform.startswith("linux"):
        pytest.skip("USDT probes are built on Linux only")
    if not shutil.which("readelf"):
        pytest.skip("readelf is not installed")
    if not _sdt_header_found():
        pytest.skip("the compiler finds no <sys/sdt.h> (Debian: apt-get install systemtap-sdt-dev): "
                    "the probes compile to nothing")


def _stapsdt_notes():
    out = subprocess.run(["readelf", "-n", EXT], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    notes = {}
    for provider, name, sem in re.findall(r"Provider: (\S+)\s+Name: (\S+)\s+Location: \S+, Base: \S+, Semaphore: (\S+)",
                                          out):
        notes.setdefault((provider, name), set()).add(int(sem, 16))
    return notes


def test_readelf_lists_every_probe():
    _needs_probes()
    notes = _stapsdt_notes()
    assert notes, f"readelf -n {EXT} lists no stapsdt notes"
    assert {p for p, _ in notes} == {"etnp"}
    missing = [p for p in PROBES if ("etnp", p) not in notes]
    assert not missing, f"probes missing from {EXT}: {missing}"
    for p in WITH_SEMAPHORE:
        assert 0 not in notes[("etnp", p)], f"probe {p} has no semaphore"


CHILD = textwrap.dedent("""
    import sys, numpy as np, executorch_numpy_runtime as en
    rt = en.Runtime(num_threads=1)
    m = rt.load_program(sys.argv[1]).load_method("forward")
    with np.load(sys.argv[2]) as z:
        x = [z["forward:in:0"]]
    for _ in range(3):
        m(x)
    try:
        rt.load_program(b"not a program")
    except en.ProgramLoadError:
        pass
    print("child done", flush=True)
""")


def _run_child(tmp_path, prefix=()):
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(EXT)) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run(list(prefix) + [sys.executable, str(child), model_path("mlp_xnn"), model_path("mlp_xnn")[:-4] + ".npz"],
                       env=env, timeout=120, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert "child done" in r.stdout, r.stdout


def _perf_sees_probes_fire(tmp_path):
    """perf: the SDT events from the build-id cache, recorded while the child runs."""
    def perf(*args, check=True):
        r = subprocess.run(["perf"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=120)
        if check and r.returncode:
            pytest.skip(f"perf {' '.join(args)} fails here (uprobes not permitted in this VM?): {r.stdout[-500:]}")
        return r.stdout
    perf("buildid-cache", "--add", EXT)
    try:
        perf("probe", "-q", "-a", "sdt_etnp:method_execute_begin")
        perf("probe", "-q", "-a", "sdt_etnp:instruction_begin")
        data = str(tmp_path / "perf.data")
        _run_child(tmp_path, ["perf", "record", "-q", "-o", data, "-e", "sdt_etnp:method_execute_begin",
                              "-e", "sdt_etnp:instruction_begin", "--"])
        text = perf("script", "-i", data)
    finally:
        perf("probe", "-q", "-d", "sdt_etnp:*", check=False)
    assert re.findall(r"sdt_etnp:method_execute_begin: \(\w+\) arg1=\d+ arg2=(\d+)", text)[:3] == ["1", "2", "3"], text[-2000:]
    assert re.search(r"sdt_etnp:instruction_begin: \(\w+\) arg1=0 ", text), text[-2000:]  # (behind the semaphore)


def test_a_probe_fires(tmp_path):
    _needs_probes()
    if os.geteuid() != 0:
        pytest.skip("attaching uprobes needs root")
    bpftrace = shutil.which("bpftrace")
    if not bpftrace:
        if shutil.which("perf"):
            return _perf_sees_probes_fire(tmp_path)
        pytest.skip("neither bpftrace nor perf is installed (apt-get install bpftrace)")
    script = (
        f'usdt:{EXT}:etnp:method_execute_begin {{ printf("EXEC %s %d\\n", str(arg0), arg1); }}\n'
        f'usdt:{EXT}:etnp:method_execute_end {{ printf("END %s %d %d\\n", str(arg0), arg1, arg2); }}\n'
        f'usdt:{EXT}:etnp:instruction_begin {{ printf("INSN %d %s\\n", arg0, str(arg1)); }}\n'
        f'usdt:{EXT}:etnp:xnn_node_begin {{ printf("NODE %d %s\\n", arg0, str(arg1)); }}\n'
        f'usdt:{EXT}:etnp:error {{ printf("ERROR %d %s\\n", arg0, str(arg1)); }}\n')
    bt = subprocess.Popen([bpftrace, "-e", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(iter(bt.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not any("Attaching" in line for line in lines) and bt.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if not any("Attaching" in line for line in lines) or bt.poll() is not None:
            time.sleep(0.5)
            pytest.skip("bpftrace cannot attach here (uprobes not permitted in this VM?): " + "".join(lines)[-500:])
        # "Attaching" is printed before the probes are live; on a loaded machine that takes a while:
        # the child runs again (a fresh process, call ids from 1) until its events show
        for _ in range(10):
            time.sleep(1)
            _run_child(tmp_path)
            time.sleep(1)
            if any(line.startswith("END ") for line in lines):
                break
    finally:
        if bt.poll() is None:
            bt.send_signal(signal.SIGINT)
        try:
            bt.wait(timeout=30)
        except subprocess.TimeoutExpired:
            bt.kill()
            bt.wait()
        reader.join(timeout=10)
    text = "".join(lines)
    execs = re.findall(r"^EXEC forward (\d+)$", text, re.M)
    assert {"1", "2", "3"} <= set(execs), text[-2000:]
    assert re.search(r"^END forward 1 0$", text, re.M), text[-2000:]
    assert re.search(r"^INSN 0 \S+$", text, re.M), text[-2000:]  # (behind the semaphore)
    assert re.search(r"^NODE 0 XNN\S+$", text, re.M), text[-2000:]
    assert re.search(r"^ERROR [1-9]\d* .+$", text, re.M), text[-2000:]  # the garbage bytes
