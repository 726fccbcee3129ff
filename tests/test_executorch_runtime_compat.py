"""executorch_numpy_runtime.executorch_runtime: ExecuTorch 1.3.1's executorch.runtime API, numpy in/out."""
import io
from pathlib import Path

import numpy as np
import pytest

from conftest import method_inputs, method_outputs, model_path, reference
from executorch_numpy_runtime import ExecuTorchError
from executorch_numpy_runtime.executorch_runtime import (Method, MethodMeta, Program, Runtime, TensorInfo,
                                                         Verification)


def test_docstring_example_ported(capsys):
    # executorch/runtime/__init__.py's example, with only the import (and torch.ones -> np.ones) changed
    et_runtime: Runtime = Runtime.get()
    program: Program = et_runtime.load_program(Path(model_path("add")))
    print("Program methods:", program.method_names)
    forward: Method = program.load_method("forward")

    inputs = (np.ones(3, np.float32), np.ones(3, np.float32))
    outputs = forward.execute(inputs)
    print(f"Ran forward({inputs})")
    print(f"  outputs: {outputs}")
    out = capsys.readouterr().out
    assert "Program methods: {'forward'}" in out
    np.testing.assert_array_equal(outputs[0], np.full(3, 2.0, np.float32))


def test_introspection_example():
    runtime = Runtime.get()
    assert runtime is Runtime.get()
    backends = runtime.backend_registry.registered_backend_names
    assert "XnnpackBackend" in backends
    assert runtime.backend_registry.is_available("XnnpackBackend")
    assert not runtime.backend_registry.is_available("CoreMLBackend")
    ops = runtime.operator_registry.operator_names
    assert isinstance(ops, set) and "aten::add.out" in ops


def test_load_program_sources_and_verification():
    rt = Runtime.get()
    path = model_path("mlp")
    data = open(path, "rb").read()
    for v in (Verification.Minimal, Verification.InternalConsistency):
        for src in (path, Path(path), data, bytearray(data), io.BytesIO(data)):
            assert rt.load_program(src, verification=v).method_names == {"forward"}
    assert int(Verification.Minimal) == 0 and int(Verification.InternalConsistency) == 1
    with pytest.raises(TypeError):
        rt.load_program(path, verification="full")
    with pytest.raises(TypeError):
        rt.load_program(3.5)
    assert rt.load_program(path, enable_etdump=True).method_names == {"forward"}  # tests/test_etdump.py
    with pytest.raises(TypeError):
        rt.load_program(path, enable_etdump=True, debug_buffer_size=-1)
    with pytest.raises(ExecuTorchError):
        rt.load_program(b"not a program")


def test_metadata_shapes():
    prog = Runtime.get().load_program(model_path("multi_method"))
    meta: MethodMeta = prog.metadata("matmul")
    native = prog.native.signature("matmul")
    assert meta.name() == "matmul"
    assert meta.num_inputs() == len(native.inputs) and meta.num_outputs() == len(native.outputs)
    assert meta.num_attributes() == 0
    t: TensorInfo = meta.input_tensor_meta(0)
    assert t.sizes() == native.inputs[0].shape and isinstance(t.sizes(), tuple)
    assert t.dtype() == 6  # ScalarType::Float
    assert t.nbytes() == 4 * int(np.prod(t.sizes()))
    assert t.is_memory_planned() is True
    assert repr(t).startswith(f"TensorInfo(sizes=[{', '.join(map(str, t.sizes()))}], dtype=Float, is_memory_planned=True")
    assert repr(meta).startswith("MethodMeta(name='matmul', num_inputs=2, input_tensor_meta=['TensorInfo(")
    for bad in (-1, meta.num_inputs(), 99):
        with pytest.raises(IndexError):
            meta.input_tensor_meta(bad)
    with pytest.raises(IndexError):
        meta.output_tensor_meta(meta.num_outputs())
    with pytest.raises(IndexError):
        meta.attribute_tensor_meta(0)


def test_load_method_cached_and_runs():
    prog = Runtime.get().load_program(model_path("multi_method"))
    ref = reference("multi_method")
    assert prog.method_names == {"forward", "matmul"}
    m = prog.load_method("matmul")
    assert prog.load_method("matmul") is m
    outs = m.execute(method_inputs(ref, "matmul"))
    for o, r in zip(outs, method_outputs(ref, "matmul")):
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)
    assert m.metadata.num_inputs() == 2 and m.metadata.name() == "matmul"
    assert m.native.name == "matmul"
    with pytest.raises(KeyError):
        prog.load_method("nope")
    with pytest.raises(RuntimeError):  # not loaded with enable_etdump=True
        prog.write_etdump_result_to_file("a", "b")
