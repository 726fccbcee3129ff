"""Input/output names from the container metadata, dict and keyword feeds, outputs=, file objects and mmap."""
import io
import mmap

import numpy as np
import pytest

from conftest import method_inputs, method_outputs, model_path, reference
from executorch_numpy_runtime import ExecutionError, ProgramLoadError, Runtime
from executorch_numpy_runtime.named_io import io_names


@pytest.fixture(scope="module")
def named():
    return Runtime.get().load_program(model_path("named_io")).load_method("forward")


def test_names_from_export(named):
    # forward(image, *, scale) -> {"logits", "probs"}: the keyword and the dict keys are kept
    assert named.input_names == ("input_0", "scale")
    assert named.output_names == ("logits", "probs")
    assert named.program.io_names("forward") == (named.input_names, named.output_names)


def test_positional_names():
    m = Runtime.get().load_program(model_path("multi_method")).load_method("matmul")
    assert m.input_names == ("input_0", "input_1")
    assert m.output_names == ("output_0", "output_1")


def test_io_names_fallbacks():
    assert io_names("", "", 2, 1) == (("input_0", "input_1"), ("output_0",))
    assert io_names("not json", "[1, 2]", 1, 1) == (("input_0",), ("output_0",))
    nested = ('[1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": "builtins.tuple", '
              '"context": "null", "children_spec": [{"type": "builtins.dict", "context": "[\\"image\\", \\"mask\\"]", '
              '"children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": null, '
              '"context": null, "children_spec": []}]}]}, {"type": "builtins.dict", "context": "[]", '
              '"children_spec": []}]}]')
    assert io_names(nested, "", 2, 0)[0] == ("image", "mask")
    assert io_names(nested, "", 3, 0)[0] == ("input_0", "input_1", "input_2")  # count mismatch


def test_dict_and_keyword_feeds(named):
    ref = reference("named_io")
    x, s = method_inputs(ref, "forward")
    want = method_outputs(ref, "forward")
    for outs in (named({"input_0": x, "scale": s}), named(input_0=x, scale=s), named({"scale": s}, input_0=x)):
        for o, w in zip(outs, want):
            np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-6)
    d = named.run_named(input_0=x, scale=s)
    assert list(d) == ["logits", "probs"]
    np.testing.assert_allclose(d["probs"], want[1], rtol=1e-5, atol=1e-6)
    with pytest.raises(ExecutionError, match="no input named 'image'"):
        named({"image": x, "scale": s})
    with pytest.raises(ExecutionError, match="missing input"):
        named({"scale": s})
    with pytest.raises(ExecutionError, match="given twice"):
        named({"input_0": x, "scale": s}, scale=s)
    with pytest.raises(TypeError):
        named({0: x, "scale": s})


def test_outputs_filled_in_place(named):
    ref = reference("named_io")
    x, s = method_inputs(ref, "forward")
    dst = [np.full((2, 3), np.nan, np.float32), np.full((2, 3), np.nan, np.float32)]
    res = named([x, s], outputs=dst)
    assert res[0] is dst[0] and res[1] is dst[1]
    np.testing.assert_allclose(dst[1], method_outputs(ref, "forward")[1], rtol=1e-5, atol=1e-6)
    with pytest.raises(ExecutionError, match="dtype"):
        named([x, s], outputs=[np.empty((2, 3), np.float64), dst[1]])
    with pytest.raises(ExecutionError, match="shape"):
        named([x, s], outputs=[np.empty((3, 2), np.float32), dst[1]])
    with pytest.raises(ExecutionError, match="2 outputs"):
        named([x, s], outputs=[dst[0]])
    ro = np.empty((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ExecutionError, match="read-only"):
        named([x, s], outputs=[ro, dst[1]])
    with pytest.raises(ExecutionError, match="C-contiguous"):
        named([x, s], outputs=[np.empty((3, 2), np.float32).T, dst[1]])
    with pytest.raises(TypeError):
        named([x, s], outputs=dst[0])


def test_outputs_dynamic_shapes_copied():
    m = Runtime.get().load_program(model_path("mlp_dynamic")).load_method()
    ref = reference("mlp_dynamic")
    ins = method_inputs(ref, "forward")
    want = method_outputs(ref, "forward")
    dst = [np.empty_like(w) for w in want]
    assert m(ins, outputs=dst)[0] is dst[0]
    np.testing.assert_allclose(dst[0], want[0], rtol=1e-4, atol=1e-5)
    with pytest.raises(ExecutionError, match="shape"):
        m(ins, outputs=[np.empty((want[0].shape[0] + 1,) + want[0].shape[1:], want[0].dtype)])


def test_file_objects_and_mmap():
    rt = Runtime.get()
    path = model_path("add")
    with open(path, "rb") as fh:
        assert rt.load_program(fh).method_names == ("forward",)
    data = open(path, "rb").read()
    assert rt.load_program(io.BytesIO(data)).method_names == ("forward",)
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        m = rt.load_program(mm).load_method()
    np.testing.assert_array_equal(m([np.ones(3, np.float32)] * 2)[0], np.full(3, 2.0, np.float32))
    with open(path, "r") as fh, pytest.raises(TypeError, match="binary mode"):
        rt.load_program(fh)
    with pytest.raises(ProgramLoadError):
        rt.load_program(io.BytesIO(b"\0" * 64))
    with pytest.raises(TypeError):
        rt.load_program(12)


def test_sequence_and_keywords_together_refused(named):
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(TypeError, match="not both"):
        named([x], scale=np.ones(1, np.float32))
