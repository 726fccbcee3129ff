"""Bundled programs (.bpte, BP08): load_program loads the inner program; etnp verify runs the cases."""
import io

import numpy as np
import pytest

from conftest import MODELS
from executorch_numpy_runtime import ProgramLoadError, Runtime, bundled
from executorch_numpy_runtime.cli import main

GOOD = f"{MODELS}/mlp_bundled.bpte"
BAD = f"{MODELS}/mlp_bundled_bad.bpte"


def test_identifier_and_parse():
    data = open(GOOD, "rb").read()
    assert data[4:8] == b"BP08"
    bp = bundled.parse(data)
    assert [s.method_name for s in bp.suites] == ["forward"]
    (suite,) = bp.suites
    assert len(suite.test_cases) == 2
    case = suite.test_cases[0]
    assert case.inputs[0].shape == (3, 6) and case.inputs[0].dtype == np.float32
    assert case.expected_outputs[0].shape == (3, 2)
    assert bytes(bp.program[4:8]) == b"ET12"


def test_load_program_takes_bpte():
    rt = Runtime.get()
    data = open(GOOD, "rb").read()
    case = bundled.parse(data).suites[0].test_cases[1]
    for src in (GOOD, data, io.BytesIO(data), memoryview(data)):
        out = rt.load_program(src).load_method()(case.inputs)
        np.testing.assert_allclose(out[0], case.expected_outputs[0], rtol=1e-5, atol=1e-6)


def test_verify():
    rt = Runtime.get()
    good = bundled.verify(rt, GOOD)
    assert [r.passed for r in good] == [True, True] and max(r.max_abs_error for r in good) < 1e-5
    bad = bundled.verify(rt, BAD)
    assert [r.passed for r in bad] == [True, False]
    assert abs(bad[1].max_abs_error - 0.25) < 1e-3


def test_cli_verify(capsys):
    assert main(["verify", GOOD]) == 0
    out = capsys.readouterr().out
    assert "forward[0]: PASS" in out and "2 passed, 0 failed" in out
    assert main(["verify", BAD]) == 1
    out = capsys.readouterr().out
    assert "forward[1]: FAIL  max |error| = 0.25" in out and "1 passed, 1 failed" in out
    assert main(["verify", BAD, "--atol", "0.3"]) == 0


def test_corrupt_bundles_raise():
    data = bytearray(open(GOOD, "rb").read())
    for cut in (8, 40, 200, len(data) // 2):
        with pytest.raises(ProgramLoadError):
            bundled.parse(bytes(data[:cut]))
    with pytest.raises(ProgramLoadError, match="not a bundled program"):
        bundled.parse(open(f"{MODELS}/add.pte", "rb").read())
    rng = np.random.default_rng(0)
    for _ in range(200):  # random byte flips: a clear error or a parse, never a crash
        d = bytearray(data)
        for i in rng.integers(8, len(d), 4):
            d[i] = rng.integers(0, 256)
        try:
            bundled.parse(bytes(d))
        except ProgramLoadError:
            pass
