"""Every CLI command, run as a user would (python -m executorch_numpy_runtime ...)."""
import os
import subprocess
import sys

import numpy as np

from conftest import model_path, reference


def cli(*args, check=True):
    r = subprocess.run([sys.executable, "-m", "executorch_numpy_runtime", *args], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_example():
    r = cli("example")
    assert "OK" in r.stdout


def test_info():
    r = cli("info", model_path("small_cnn_xnn"))
    assert "method forward" in r.stdout and "XnnpackBackend" in r.stdout and "float32[2, 3, 16, 16]" in r.stdout


def test_run(tmp_path):
    out = tmp_path / "out.npz"
    cli("run", model_path("mlp"), "--inputs", os.path.join(os.path.dirname(model_path("mlp")), "mlp.npz"),
        "--out", str(out))
    with np.load(out) as z:
        np.testing.assert_allclose(z["output_0"], reference("mlp")["forward:out:0"], atol=1e-5, rtol=1e-4)


def test_batch_dir_with_a_bad_item(tmp_path):
    ref = reference("mlp")
    d = tmp_path / "in"
    d.mkdir()
    np.savez(d / "a.npz", input_0=ref["forward:in:0"])
    np.savez(d / "b.npz", input_0=ref["forward:in:0"].astype(np.float64))  # wrong dtype: reported, not fatal
    np.savez(d / "c.npz", input_0=ref["forward:in:0"] * 0)
    r = cli("batch", model_path("mlp"), "--inputs", str(d), "--out", str(tmp_path / "out"), check=False)
    assert r.returncode == 1
    assert "b: FAILED" in r.stderr and "2 ok, 1 failed" in r.stdout
    assert r.stderr.splitlines()[-1] == "error: 1 of 3 items failed"
    with np.load(tmp_path / "out" / "a.npz") as z:
        np.testing.assert_allclose(z["output_0"], ref["forward:out:0"], atol=1e-5, rtol=1e-4)
    assert not (tmp_path / "out" / "b.npz").exists()


def test_batch_stacked_npz(tmp_path):
    ref = reference("mlp")
    stacked = np.stack([ref["forward:in:0"]] * 3)
    np.savez(tmp_path / "items.npz", input_0=stacked)
    r = cli("batch", model_path("mlp"), "--inputs", str(tmp_path / "items.npz"), "--out", str(tmp_path / "o"))
    assert "3 ok, 0 failed" in r.stdout
    with np.load(tmp_path / "o" / "item_00002.npz") as z:
        np.testing.assert_allclose(z["output_0"], ref["forward:out:0"], atol=1e-5, rtol=1e-4)


def test_bench():
    r = cli("bench", model_path("mlp"), "--iters", "3", "--warmup", "1")
    assert "median" in r.stdout


def test_errors_are_reported():
    r = cli("info", "/nonexistent.pte", check=False)
    assert r.returncode == 1 and "ProgramLoadError" in r.stderr


def _one_clear_line(r, code=None):
    assert r.returncode != 0 and (code is None or r.returncode == code), (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_run_bad_inputs_files(tmp_path):
    mlp = model_path("mlp")
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 this is not a zip")
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, input_0=np.zeros((4, 16), np.float64))
    objs = tmp_path / "objs.npz"
    np.savez(objs, input_0=np.array([{"a": 1}, None], dtype=object))
    for path, why in ((tmp_path / "missing.npz", "no such file"), (corrupt, "not a valid .npz"),
                      (wrong, "dtype float64"), (objs, "Python objects"), (tmp_path, "is a directory")):
        line = _one_clear_line(cli("run", mlp, "--inputs", str(path), "--out", str(tmp_path / "o.npz"), check=False))
        assert why in line, line


def test_run_out_paths(tmp_path):
    mlp, ins = model_path("mlp"), os.path.join(os.path.dirname(model_path("mlp")), "mlp.npz")
    d = tmp_path / "outdir"
    d.mkdir()
    line = _one_clear_line(cli("run", mlp, "--inputs", ins, "--out", str(d), check=False))
    assert "is a directory" in line
    assert not (tmp_path / "outdir.npz").exists()
    line = _one_clear_line(cli("run", mlp, "--inputs", ins, "--out", str(tmp_path / "no" / "such" / "o.npz"), check=False))
    assert "cannot write" in line
    cli("run", mlp, "--inputs", ins, "--out", str(tmp_path / "plain"))  # written as named, no .npz appended
    assert (tmp_path / "plain").exists() and not (tmp_path / "plain.npz").exists()


def test_bench_bad_numbers():
    for args, why in ((["--iters", "0"], "--iters"), (["--warmup", "-1"], "--warmup"), (["--iters", "x"], "invalid int")):
        line = _one_clear_line(cli("bench", model_path("mlp"), *args, check=False))
        assert why in line, line


def test_batch_goes_on_after_a_corrupt_item(tmp_path):
    ref = reference("mlp")
    d = tmp_path / "in"
    d.mkdir()
    np.savez(d / "a.npz", input_0=ref["forward:in:0"])
    (d / "b.npz").write_bytes(b"PK\x03\x04 a corrupt zip")
    np.savez(d / "c.npz", input_0=ref["forward:in:0"])
    r = cli("batch", model_path("mlp"), "--inputs", str(d), "--out", str(tmp_path / "out"), check=False)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "b: FAILED" in r.stderr and "2 ok, 1 failed" in r.stdout


def test_compressed_bomb_is_refused_from_its_header(tmp_path):
    bomb = tmp_path / "bomb.npz"
    np.savez_compressed(bomb, input_0=np.zeros((1 << 26,), np.float32))  # 256 MiB of zeros, ~250 kB on disk
    assert bomb.stat().st_size < 4 << 20
    r = subprocess.run([sys.executable, "-c", "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, "
                        "(3 << 30, 3 << 30)); from executorch_numpy_runtime.cli import main; "
                        f"sys.exit(main(['run', {model_path('mlp')!r}, '--inputs', {str(bomb)!r}, "
                        f"'--out', {str(tmp_path / 'o.npz')!r}]))"], capture_output=True, text=True, timeout=60)
    line = _one_clear_line(r)
    assert "shape [67108864]" in line and "expects float32[4, 16]" in line, line
