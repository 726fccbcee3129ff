"""Convolution taps that read only padding are dropped at load (native/src/delegates/xnnpack/xnn_dead_taps.cpp):
the filters packed are the taps kept, and the results are eager's."""
import numpy as np

import executorch_numpy_runtime as en
from conftest import assert_matches, method_inputs, method_outputs, model_path, reference


def test_dead_taps_are_not_packed_and_results_match():
    m = en.Runtime.get().load_program(model_path("dead_taps_xnn")).load_method("forward")
    got = m(method_inputs(reference("dead_taps_xnn"), "forward"))
    assert_matches(got, method_outputs(reference("dead_taps_xnn"), "forward"), 1e-5, 1e-4)
    # packed in panels of 16 columns, K rows each: the dilation-12 3x3 on 10x10 keeps its centre tap
    # (K = 8 input channels), the (9, 1)-dilated one its middle row (K = 3 taps x 8), the plain 3x3
    # all 9 (K = 72); plus the three biases (16 + 12 + 8 floats). All taps kept: 3 x 72 x 16 floats.
    want = 4 * (8 * 16 + 24 * 16 + 72 * 16) + 4 * (16 + 12 + 8)
    assert m.memory_stats()["packed_weights"] == want


def test_dead_taps_at_two_threads_match_one():
    name = "dead_taps_xnn"
    one = en.Runtime(num_threads=1).load_program(model_path(name)).load_method("forward")
    two = en.Runtime(num_threads=2).load_program(model_path(name)).load_method("forward")
    x = method_inputs(reference(name), "forward")
    for a, b in zip(one(x), two(x)):
        np.testing.assert_array_equal(a, b)
