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
    assert r.returncode == 2
    assert "b: FAILED" in r.stderr and "2 ok, 1 failed" in r.stdout
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
