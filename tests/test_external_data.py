"""Programs exported with external_constants=True keep their weights in a .ptd (FlatTensor) file:
load_program(path, data_files=[...]) / data_path=... supplies it; without it, or with the wrong
file, loading fails naming what is missing."""
import os

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import MODELS, assert_matches, method_inputs, method_outputs, model_path, reference

NAMES = ["mlp_external", "mlp_external_xnn"]


def ptd(name):
    return os.path.join(MODELS, name + ".ptd")


@pytest.mark.parametrize("name", NAMES)
def test_external_weights_match_torch(rt, name):
    ref = reference(name)
    with open(ptd(name), "rb") as fh:
        blob = fh.read()
    for kw in (dict(data_files=[ptd(name)]), dict(data_path=ptd(name)), dict(data_files=[blob]),
               dict(data_files=[memoryview(blob)])):
        method = rt.load_program(model_path(name), **kw).load_method("forward")
        assert_matches(method(method_inputs(ref, "forward")), method_outputs(ref, "forward"), 1e-5, 1e-4, name)
    # from bytes, and after the data file's bytes are gone (they are copied)
    with open(model_path(name), "rb") as fh:
        prog = rt.load_program(fh.read(), data_files=[bytearray(blob)])
    assert_matches(prog.load_method("forward")(method_inputs(ref, "forward")), method_outputs(ref, "forward"),
                   1e-5, 1e-4, name)


@pytest.mark.parametrize("name", NAMES)
def test_missing_data_names_the_key(rt, name):
    prog = rt.load_program(model_path(name))
    with pytest.raises(en.ProgramLoadError, match=r"not in the program|no data file has that key") as e:
        prog.load_method("forward")
    assert "data_files" in str(e.value)
    # the other fixture's data file does not hold this program's keys
    other = NAMES[1 - NAMES.index(name)]
    with pytest.raises(en.ProgramLoadError, match=os.path.basename(ptd(other))):
        rt.load_program(model_path(name), data_files=[ptd(other)]).load_method("forward")


def test_bad_data_files(rt, tmp_path):
    with pytest.raises(en.ProgramLoadError, match="cannot read data file"):
        rt.load_program(model_path("mlp_external"), data_files=[str(tmp_path / "absent.ptd")])
    with pytest.raises(en.ProgramLoadError, match="FlatTensor"):  # a .pte is not a .ptd
        rt.load_program(model_path("mlp_external"), data_files=[model_path("mlp_external")])
    with open(ptd("mlp_external"), "rb") as fh:
        blob = fh.read()
    for cut in (10, 60, len(blob) // 2, len(blob) - 1):
        with pytest.raises(en.ProgramLoadError):
            rt.load_program(model_path("mlp_external"), data_files=[blob[:cut]]).load_method("forward")
    with pytest.raises(TypeError):
        rt.load_program(model_path("mlp_external"), data_files=[3])
