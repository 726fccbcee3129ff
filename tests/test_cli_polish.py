"""CLI and start-up: --version, bench --profile, the progress bar, lazy ml_dtypes, the README's example."""
import io
import os
import re
import subprocess
import sys

import numpy as np

from conftest import model_path
from executorch_numpy_runtime import __version__
from executorch_numpy_runtime.cli import main
from executorch_numpy_runtime.progress import Progress

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_version(capsys):
    try:
        main(["--version"])
    except SystemExit as e:
        assert e.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"etnp {__version__}") and "1.3.1" in out


def test_bench_profile(capsys, tmp_path):
    trace = tmp_path / "t.json"
    assert main(["bench", model_path("mlp_xnn"), "--iters", "2", "--warmup", "0", "--profile", "--top", "3",
                 "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "it/s" in out and "operator" in out and "ms/call" in out
    table = out[out.index("operator"):].splitlines()[1:]
    assert 1 <= len([ln for ln in table if ln.startswith("  ")]) <= 3
    assert trace.exists()


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_rate_eta_and_notes_not_overwritten():
    s = _Tty()
    bar = Progress(4, stream=s)
    bar.update(1)
    bar.note("item_1: FAILED: boom")
    bar.update(2)
    bar.update(4)
    text = s.getvalue()
    assert re.search(r"\d+/4 [\d.]+ it/s ETA (\d\d:\d\d|--:--)", text)
    # the note starts on a cleared line and ends with a newline before the bar is drawn again
    assert "\r\x1b[Kitem_1: FAILED: boom\n[" in text
    assert text.endswith("4/4 " + text.rsplit("4/4 ", 1)[1]) and text.endswith("\n")
    quiet = io.StringIO()  # not a terminal: no bar, notes only
    bar = Progress(2, stream=quiet)
    bar.update(1)
    bar.note("x: FAILED")
    bar.update(2)
    assert quiet.getvalue() == "x: FAILED\n"


def test_batch_failures_on_their_own_lines(tmp_path, capsys):
    d = tmp_path / "in"
    d.mkdir()
    np.savez(d / "a.npz", np.ones(3, np.float32), np.ones(3, np.float32))
    np.savez(d / "b.npz", np.ones(4, np.float32), np.ones(4, np.float32))  # wrong shape: fails
    assert main(["batch", model_path("add"), "--inputs", str(d), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert any(line.startswith("b: FAILED") for line in err.splitlines())


def test_import_does_not_load_ml_dtypes():
    code = ("import sys, numpy as np, executorch_numpy_runtime as en\n"
            "assert 'ml_dtypes' not in sys.modules, 'imported with the package'\n"
            f"m = en.Runtime.get().load_program({model_path('add')!r}).load_method()\n"
            "m([np.ones(3, np.float32)] * 2)\n"
            "assert 'ml_dtypes' not in sys.modules, 'imported by a float32 call'\n"
            "en.runtime_info()\n"
            "assert 'ml_dtypes' not in sys.modules, 'imported by runtime_info'\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_readme_example_runs_as_written(tmp_path):
    readme = open(os.path.join(ROOT, "README.md")).read()
    use = readme[readme.index("## Use"):]
    assert "example --save model.pte" in use
    code = re.search(r"```python\n(.*?)```", use, re.S).group(1)
    assert main(["example", "--save", str(tmp_path / "model.pte")]) == 0
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "forward(float32[4, 16]) -> (float32[4, 8])" in r.stdout and "(4, 8)" in r.stdout


def test_readme_compat_example_runs(tmp_path):
    readme = open(os.path.join(ROOT, "README.md")).read()
    sec = readme[readme.index("### `executorch.runtime`-compatible API"):]
    code = "import numpy as np\n" + re.search(r"```python\n(.*?)```", sec, re.S).group(1)
    main(["example", "--save", str(tmp_path / "model.pte")])
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "{'forward'}" in r.stdout and "TensorInfo(sizes=[4, 16], dtype=Float" in r.stdout
