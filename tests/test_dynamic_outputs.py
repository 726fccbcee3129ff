"""Ops whose output size depends on the data (boolean-mask indexing, nonzero), on fresh inputs."""
import numpy as np
import pytest

from conftest import model_path


@pytest.fixture(scope="module")
def mask_method(rt):
    return rt.load_program(model_path("ops_mask_index")).load_method("forward")


@pytest.mark.parametrize("fill", ["random", "none", "all"])
def test_mask_index_and_nonzero_match_numpy(mask_method, fill):
    rng = np.random.default_rng({"random": 1, "none": 2, "all": 3}[fill])
    x = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    m = {"random": rng.random((4, 5)) > 0.5, "none": np.zeros((4, 5), bool), "all": np.ones((4, 5), bool)}[fill]
    got_masked, got_nz, got_pos = mask_method([x, m])
    np.testing.assert_array_equal(got_masked, x[m])
    assert got_nz.dtype == np.int64 and got_nz.shape == (int(m.sum()), 2)
    np.testing.assert_array_equal(got_nz, np.argwhere(m))
    np.testing.assert_array_equal(got_pos, x[x > 0.25])


def test_mask_outputs_are_independent_between_calls(mask_method):
    x = np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)
    a = mask_method([x, np.eye(4, 5, dtype=bool)])
    b = mask_method([x, np.ones((4, 5), bool)])
    np.testing.assert_array_equal(a[0], x[np.eye(4, 5, dtype=bool)])  # not overwritten by the 2nd call
    assert b[0].shape == (20,)
