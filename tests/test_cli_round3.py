"""Issue #30, reliability round three (CLI): bounded reads of regular files only, range-checked
numeric arguments, .npz input keys matched by name, batch failures as an `error:` line."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import model_path, reference
from executorch_numpy_runtime.cli import main

BUNDLED = os.path.join(os.path.dirname(model_path("mlp")), "mlp_bundled.bpte")
MLP_NPZ = os.path.join(os.path.dirname(model_path("mlp")), "mlp.npz")


def etnp(*args, timeout=60):
    """`etnp ARGS` in a subprocess limited to 2 GiB of address space; a hang fails the test."""
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
            "from executorch_numpy_runtime.cli import main; sys.exit(main(sys.argv[1:]))")
    try:
        return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"etnp {' '.join(map(str, args))} did not finish in {timeout} s")


def error_line(r, code):
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "error:" in lines[0], r.stderr
    return lines[0]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.npz"
    os.mkfifo(path)  # opened by nobody: opening it for reading would block
    return path


# -- 5: regular files only, reads bounded by the file's size ---------------------------------------

def test_limit_of_the_control_run(tmp_path):  # the 2 GiB limit leaves room for a real verify and run
    assert "2 passed" in etnp("verify", BUNDLED).stdout
    assert etnp("run", model_path("mlp"), "--inputs", MLP_NPZ, "--out", tmp_path / "o.npz").returncode == 0


def test_run_out_to_a_device(tmp_path):  # zipfile seeks back on /dev/null (tell() is always 0)
    r = etnp("run", model_path("mlp"), "--inputs", MLP_NPZ, "--out", os.devnull)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


def test_verify_refuses_devices_fifos_and_directories(fifo, tmp_path):
    for path, why in (("/dev/zero", "not a regular file"), (fifo, "not a regular file"),
                      (tmp_path, "is a directory"), (tmp_path / "missing.bpte", "No such file")):
        line = error_line(etnp("verify", path), 1)
        assert why in line and str(path) in line, line


def test_run_and_batch_refuse_device_and_fifo_inputs(fifo, tmp_path):
    for path in ("/dev/zero", fifo):
        for cmd in ("run", "batch"):
            out = tmp_path / ("o.npz" if cmd == "run" else "o")
            line = error_line(etnp(cmd, model_path("mlp"), "--inputs", path, "--out", out), 1)
            assert "not a regular file" in line and str(path) in line, line


def test_batch_item_that_is_a_fifo_fails_alone(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    np.savez(d / "a.npz", input_0=reference("mlp")["forward:in:0"])
    os.mkfifo(d / "b.npz")
    r = etnp("batch", model_path("mlp"), "--inputs", d, "--out", tmp_path / "out")
    assert r.returncode == 1 and "b: FAILED" in r.stderr and "not a regular file" in r.stderr, r.stderr
    assert "1 ok, 1 failed" in r.stdout and (tmp_path / "out" / "a.npz").exists()


def test_read_regular_file(tmp_path, fifo):
    from executorch_numpy_runtime import files
    p = tmp_path / "f.bin"
    p.write_bytes(b"0123456789")
    assert files.read_regular_file(p, "test file", 10) == b"0123456789"
    assert files.read_regular_file(str(p), "test file", 1 << 20) == b"0123456789"
    with pytest.raises(files.FileError, match="10 bytes, more than the 9 bytes allowed"):
        files.read_regular_file(p, "test file", 9)
    for bad, why in (("/dev/zero", "not a regular file"), (fifo, "not a regular file (a FIFO)"),
                     (tmp_path, "is a directory"), (tmp_path / "nope", "No such file")):
        with pytest.raises(files.FileError, match=r"^test file .*" + re.escape(why)):
            files.read_regular_file(bad, "test file", 1 << 20)
        with pytest.raises(OSError):  # FileError is an OSError
            files.check_regular_file(bad, "test file")
    # a regular file whose size stat reports 0 but that has data (as /proc files): it grew while read
    with pytest.raises(files.FileError, match="changed while it was read"):
        files.read_regular_file("/proc/self/status", "test file", 1 << 20)


def test_read_regular_file_that_shrinks(tmp_path, monkeypatch):
    from executorch_numpy_runtime import files
    p = tmp_path / "f.bin"
    p.write_bytes(b"abc")
    real = os.fstat

    def bigger(fd):  # stat says 5 bytes; only 3 are there by the time they are read
        st = real(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 5,
                               st.st_atime, st.st_mtime, st.st_ctime))
    monkeypatch.setattr(files.os, "fstat", bigger)
    with pytest.raises(files.FileError, match="changed while it was read"):
        files.read_regular_file(p, "test file", 100)


# -- 7 and 10: numeric arguments range-checked by argparse -----------------------------------------

BAD_NUMBERS = [
    ("bench", ["--threads", "1099511627776"], "--threads"),
    ("bench", ["--threads", "0"], "--threads"),
    ("bench", ["--threads", "257"], "--threads"),
    ("bench", ["--iters", "0"], "--iters"),
    ("bench", ["--iters", "x"], "invalid int value"),
    ("bench", ["--warmup", "-1"], "--warmup"),
    ("bench", ["--top", "0"], "--top"),
    ("bench", ["--top", "-1"], "--top"),
    ("generate", ["--max-new-tokens", "-1"], "--max-new-tokens"),
    ("generate", ["--max-new-tokens", "1099511627776000"], "--max-new-tokens"),
    ("generate", ["--threads", "1099511627776"], "--threads"),
    ("generate", ["--top-k", "0"], "--top-k"),
    ("generate", ["--top-p", "nan"], "--top-p"),
    ("generate", ["--top-p", "0"], "--top-p"),
    ("generate", ["--top-p", "1.5"], "--top-p"),
    ("generate", ["--temperature", "nan"], "--temperature"),
    ("generate", ["--temperature", "inf"], "--temperature"),
    ("generate", ["--temperature", "-1"], "--temperature"),
    ("generate", ["--seed", "-1"], "--seed"),
    ("verify", ["--rtol", "nan"], "--rtol"),
    ("verify", ["--rtol", "-0.001"], "--rtol"),
    ("verify", ["--atol", "inf"], "--atol"),
    ("verify", ["--atol", "-0.5"], "--atol"),
    ("verify", ["--atol", "x"], "invalid float value"),
]


@pytest.mark.parametrize("cmd,args,why", BAD_NUMBERS, ids=[f"{c}{' '.join(a)}" for c, a, _ in BAD_NUMBERS])
def test_numeric_arguments_are_range_checked(cmd, args, why, capsys):
    model = {"bench": model_path("mlp"), "generate": model_path("llm_fp32_sdpa"), "verify": BUNDLED}[cmd]
    extra = ["--prompt-ids", "1,2"] if cmd == "generate" else []
    with pytest.raises(SystemExit) as e:  # argparse's error: before the command runs
        main([cmd, model, *extra, *args])
    assert e.value.code == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"etnp {cmd}: error: argument ") and why in lines[0], lines


def test_numeric_arguments_in_range_still_work(capsys):
    assert main(["bench", model_path("mlp"), "--iters", "1", "--warmup", "0", "--threads", "1"]) == 0
    assert main(["verify", BUNDLED, "--rtol", "0", "--atol", "1e-3"]) == 0
    assert main(["generate", model_path("llm_fp32_sdpa"), "--prompt-ids", "1,2", "--max-new-tokens", "0",
                 "--temperature", "0.5", "--top-k", "3", "--top-p", "1", "--seed", "0", "--threads", "1"]) == 0


# -- 8: .npz keys matched by name --------------------------------------------------------------------

def test_npz_keys_by_the_methods_input_names_in_any_order(tmp_path, capsys):
    ref = reference("named_io")
    x, s = ref["forward:in:0"], ref["forward:in:1"]
    np.savez(tmp_path / "in.npz", scale=s, input_0=x)  # the program's own names, another order
    assert main(["run", model_path("named_io"), "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz")]) == 0
    with np.load(tmp_path / "o.npz") as z:
        np.testing.assert_allclose(z["output_0"], ref["forward:out:0"], rtol=1e-5, atol=1e-6)


def test_npz_index_forms_are_matched_by_index_not_archive_order(tmp_path, capsys):
    ref = reference("xnn_ops")  # two float32[1, 4, 8, 8] inputs: swapped, the outputs differ silently
    a, b = ref["forward:in:0"], ref["forward:in:1"]
    for i, keys in enumerate((dict(in1=b, in0=a), dict(input_1=b, input_0=a), dict(arr_1=b, arr_0=a),
                              {"forward:in:1": b, "forward:in:0": a})):
        np.savez(tmp_path / f"in{i}.npz", **keys)
        out = tmp_path / f"o{i}.npz"
        assert main(["run", model_path("xnn_ops"), "--inputs", str(tmp_path / f"in{i}.npz"), "--out", str(out)]) == 0
        with np.load(out) as z:
            np.testing.assert_allclose(z["output_1"], ref["forward:out:1"], rtol=1e-5, atol=1e-5, err_msg=str(keys))
    np.savez(tmp_path / "pos.npz", a, b)  # np.savez(*arrays): arr_0, arr_1
    assert main(["run", model_path("xnn_ops"), "--inputs", str(tmp_path / "pos.npz"), "--out", str(tmp_path / "p.npz")]) == 0


def test_npz_unknown_extra_and_missing_keys_are_rejected(tmp_path, capsys):
    a = np.ones(3, np.float32)
    cases = (({"x": a, "y": a}, "unknown key"), ({"input_0": a, "input_1": a, "extra": a}, "unknown key 'extra'"),
             ({"input_0": a}, "missing input 1"), ({"input_0": a, "arr_0": a, "input_1": a}, "input 0 given twice"),
             ({"input_0": a, "input_1": a, "input_2": a}, "unknown key 'input_2'"))
    for keys, why in cases:
        np.savez(tmp_path / "in.npz", **keys)
        for cmd, out in (("run", "o.npz"), ("batch", "o")):
            rc = main([cmd, model_path("add"), "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / out)])
            err = capsys.readouterr().err
            assert rc == 1 and err.startswith("error: InputsError:") and why in err, (keys, err)
            assert "'forward:in:i'" in err and "'input_i'" in err and "arr_i" in err, err  # the accepted forms


def test_npz_reference_files_keep_working(tmp_path, capsys):
    # a reference file (tests/models/*.npz) also holds outputs and other methods' inputs: ignored
    assert main(["run", model_path("multi_method"), "--method", "matmul", "--inputs",
                 os.path.join(os.path.dirname(model_path("mlp")), "multi_method.npz"), "--out", str(tmp_path / "o.npz")]) == 0


def test_npz_rule_in_help(capsys):
    for cmd in ("run", "batch"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "input_i" in out and "arr_i" in out and "input names" in out, out


# -- 10: batch failures end with an error: line and exit status 1 ------------------------------------

def test_batch_failures_end_with_an_error_line(tmp_path, capsys):
    d = tmp_path / "in"
    d.mkdir()
    a = np.ones(3, np.float32)
    np.savez(d / "a.npz", a, a)
    np.savez(d / "b.npz", np.ones(4, np.float32), a)  # wrong shape
    np.savez(d / "c.npz", a, a)
    assert main(["batch", model_path("add"), "--inputs", str(d), "--out", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[-1] == "error: 1 of 3 items failed", lines
    assert any(ln.startswith("b: FAILED") for ln in lines) and "2 ok, 1 failed" in captured.out
    os.remove(d / "b.npz")
    assert main(["batch", model_path("add"), "--inputs", str(d), "--out", str(tmp_path / "out")]) == 0
    assert "error" not in capsys.readouterr().err
