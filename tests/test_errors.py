"""Bad inputs of every kind give the documented exception, never a crash or hang."""
import gc
import os
import random
import struct
import zlib

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import method_inputs, model_path, reference

SMALL = ["add", "mlp", "small_cnn", "int_bool", "mlp_xnn", "small_cnn_xnn", "multi_method"]


def data(name):
    with open(model_path(name), "rb") as fh:
        return fh.read()


def run_all(rt, blob, name):
    """Load and run every method; any failure must be an ExecuTorchError."""
    try:
        prog = rt.load_program(blob)
        ref = reference(name)
        for m in prog.method_names:
            meth = prog.load_method(m)
            meth(method_inputs(ref, m) if f"{m}:in:0" in ref else [])
    except en.ExecuTorchError as e:
        assert str(e)
        return e
    return None


def test_error_hierarchy():
    for cls in (en.ProgramLoadError, en.BackendNotAvailable, en.OperatorNotFound, en.ExecutionError):
        assert issubclass(cls, en.ExecuTorchError)


def test_missing_file(rt, tmp_path):
    with pytest.raises(en.ProgramLoadError, match="cannot open"):
        rt.load_program(str(tmp_path / "nope.pte"))


def test_directory(rt, tmp_path):
    with pytest.raises(en.ProgramLoadError, match="not a regular file"):
        rt.load_program(str(tmp_path))


def test_zero_length(rt, tmp_path):
    p = tmp_path / "empty.pte"
    p.write_bytes(b"")
    with pytest.raises(en.ProgramLoadError, match="too small"):
        rt.load_program(str(p))
    with pytest.raises(en.ProgramLoadError):
        rt.load_program(b"")


def test_random_bytes(rt):
    rnd = random.Random(7)
    for n in (8, 64, 1000, 10000):
        with pytest.raises(en.ProgramLoadError):
            rt.load_program(bytes(rnd.getrandbits(8) for _ in range(n)))


def test_wrong_version_identifier(rt):
    b = bytearray(data("add"))
    b[4:8] = b"ET11"
    with pytest.raises(en.ProgramLoadError, match="ET11.*1.3.1"):
        rt.load_program(bytes(b))


@pytest.mark.parametrize("name", SMALL)
def test_truncated_every_sixteenth(rt, name):
    blob = data(name)
    for k in range(16):
        cut = blob[: len(blob) * k // 16]
        with pytest.raises(en.ExecuTorchError):
            prog = rt.load_program(cut)
            for m in prog.method_names:
                prog.load_method(m)
            raise AssertionError("a truncated program loaded")  # pragma: no cover


@pytest.mark.parametrize("name", SMALL)
def test_flipped_bytes_never_crash(rt, name):
    blob = data(name)
    rnd = random.Random(zlib.crc32(name.encode()))
    for trial in range(150):
        b = bytearray(blob)
        region = rnd.choice(["header", "any", "any"])
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(0, 64) if region == "header" else rnd.randrange(len(b))
            b[i] ^= 1 << rnd.randrange(8)
        run_all(rt, bytes(b), name)


def test_offsets_past_end(rt):
    b = bytearray(data("mlp"))
    assert b[8:12] == b"eh00"
    b[16:24] = (len(b) * 4).to_bytes(8, "little")  # program size past the end
    with pytest.raises(en.ProgramLoadError, match="exceeds the file size"):
        rt.load_program(bytes(b))
    b = bytearray(data("mlp"))
    b[24:32] = (2**63).to_bytes(8, "little")  # segment base past the end
    with pytest.raises(en.ProgramLoadError, match="segment"):
        rt.load_program(bytes(b))
    b = bytearray(data("mlp"))
    b[0:4] = (len(b) + 100).to_bytes(4, "little")  # root offset past the end
    with pytest.raises(en.ProgramLoadError):
        rt.load_program(bytes(b))


def test_unknown_method(rt):
    prog = rt.load_program(model_path("mlp"))
    with pytest.raises(en.ExecutionError, match="unknown method 'nope'.*forward"):
        prog.load_method("nope")


def test_unknown_operator(rt):
    b = data("add").replace(b"aten::add", b"aten::qqq")
    with pytest.raises(en.OperatorNotFound, match="aten::qqq.out") as e:
        rt.load_program(b).load_method("forward")
    assert e.value.detail == "aten::qqq.out"


def test_unknown_delegate(rt):
    old = len(b"XnnpackBackend").to_bytes(4, "little") + b"XnnpackBackend"
    new = len(b"CoreMLBackend").to_bytes(4, "little") + b"CoreMLBackend\0"
    blob = data("mlp_xnn")
    assert old in blob
    with pytest.raises(en.BackendNotAvailable, match="CoreMLBackend") as e:
        rt.load_program(blob.replace(old, new)).load_method("forward")
    assert e.value.detail == "CoreMLBackend"


def test_wrong_inputs(rt):
    m = rt.load_program(model_path("mlp")).load_method("forward")
    x = method_inputs(reference("mlp"), "forward")[0]
    with pytest.raises(en.ExecutionError, match="takes 1 inputs, got 2"):
        m([x, x])
    with pytest.raises(en.ExecutionError, match="takes 1 inputs, got 0"):
        m([])
    with pytest.raises(en.ExecutionError, match="input 0: expected dtype float32, got float64"):
        m([x.astype(np.float64)])
    with pytest.raises(en.ExecutionError, match=r"input 0: expected shape \[4, 16\], got \[4, 15\]"):
        m([x[:, :15].copy()])
    with pytest.raises(en.ExecutionError, match="input 0: expected rank 2"):
        m([x.reshape(-1)])
    with pytest.raises(TypeError):
        m(x)
    with pytest.raises(en.ExecutionError, match="cannot convert"):
        m([object()])


def test_use_after_close_and_gc(rt):
    prog = rt.load_program(model_path("mlp"))
    m = prog.load_method("forward")
    prog.close()
    with pytest.raises(en.ExecutionError, match="closed"):
        prog.load_method("forward")
    x = method_inputs(reference("mlp"), "forward")
    assert m(x)[0].shape == (4, 8)  # a method keeps what it needs alive
    del prog
    gc.collect()
    assert m(x)[0].shape == (4, 8)
    with en.Runtime().load_program(model_path("add")) as p:
        assert p.method_names == ("forward",)


def test_corrupt_xnnpack_blob(rt):
    blob = bytearray(data("mlp_xnn"))
    i = blob.find(b"XH00")
    assert i > 0
    blob[i + 6: i + 10] = (0xFFFFFFF0).to_bytes(4, "little")  # flatbuffer offset far past the end
    with pytest.raises(en.ProgramLoadError, match="XNNPACK|outside"):
        rt.load_program(bytes(blob)).load_method("forward")


def test_fuzz_corpus_replays_cleanly(rt):
    """Every kept fuzzer input (tests/fuzz_corpus) loads, or fails with an ExecuTorchError."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_corpus")
    files = sorted(os.listdir(d))
    assert files
    for f in files:
        with open(os.path.join(d, f), "rb") as fh:
            blob = fh.read()
        try:
            prog = rt.load_program(blob)
            for m in prog.method_names:
                prog.load_method(m)
        except en.ExecuTorchError:
            pass


def kept_input_method(rt, name):
    """'forward' of tests/fuzz_corpus/NAME, loaded (the inputs below fail when the method runs)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_corpus", name), "rb") as fh:
        return rt.load_program(fh.read()).load_method("forward")


def test_depthwise_filter_without_channels(rt):
    """conv_regimes_xnn with its channel-multiplier-2 depthwise filter's output channels set to 0 (the
    input libFuzzer found: a division by zero - SIGFPE - when the method ran) is an ExecutionError."""
    m = kept_input_method(rt, "crash-depthwise-no-filter-channels")
    with pytest.raises(en.ExecutionError, match="XNNDepthwiseConv2d: filter channels"):
        m(method_inputs(reference("conv_regimes_xnn"), "forward"))


def test_convert_input_without_data(rt):
    """qact_cnn_static_xnn with a Convert's input made a value nothing writes (found by setting each
    small integer of the fixture to 0: a float read from a null buffer - SIGSEGV - when it ran) is a
    ProgramLoadError at load."""
    with pytest.raises(en.ProgramLoadError, match=r"XNNConvert \(node 0\) reads value 0, which is not a constant"):
        kept_input_method(rt, "crash-convert-input-without-data")


def mutated_u32(name, offset, was, now, count=1):
    """Fixture NAME's bytes with COUNT little-endian 32-bit fields from OFFSET on changed from WAS to NOW."""
    with open(model_path(name), "rb") as fh:
        b = bytearray(fh.read())
    for k in range(count):
        assert struct.unpack_from("<I", b, offset + 4 * k)[0] == was, "the fixture changed: find the field again"
        struct.pack_into("<I", b, offset + 4 * k, now)
    return bytes(b)


def test_delegate_value_read_before_anything_writes_it(rt):
    """xnn_ops with its first node's output id changed (3 -> 1): the next node reads value 3, which
    nothing writes. It used to run: the value's buffer is one the runtime lends every delegate in
    turn, so the outputs held what another program had left there and changed from call to call.
    Now a load error, as is a graph output no node writes (mlp_xnn's last output id 2 -> 0)."""
    ops = reference("xnn_ops")
    rt.load_program(model_path("xnn_ops")).load_method("forward")(method_inputs(ops, "forward"))  # fills the bank
    with pytest.raises(en.ProgramLoadError, match=r"XNNTanh \(node 1\) reads value 3, which is not a constant, "
                                                  r"a graph input or an earlier node's output"):
        rt.load_program(mutated_u32("xnn_ops", 5388, 3, 1)).load_method("forward")
    with pytest.raises(en.ProgramLoadError, match="graph output value 6 is written by no node"):
        rt.load_program(mutated_u32("mlp_xnn", 2556, 2, 0)).load_method("forward")


def test_kernel_output_that_is_a_constant(rt):
    """ops_binary with instruction 5's out and its return (two fields, 24 -> 2) made value 2, a
    constant of the program. The kernel used to write it: that output silently wrong, and the
    constant changed for every later call and every method of the program. Now the call fails
    before anything is written."""
    p = rt.load_program(mutated_u32("ops_binary", 4036, 24, 2, count=2))
    inputs = method_inputs(reference("ops_binary"), "forward")
    for _ in range(2):
        with pytest.raises(en.ExecutionError, match=r"_to_dim_order_copy.out \(instruction 5\): output tensor \[\] "
                                                     r"is a constant of the program"):
            p.load_method("forward")(inputs)


def test_delegate_output_that_is_a_constant(rt):
    """xnn_scalar_io with the delegate call's first output made value 0 (one field, 4 -> 0; found by
    tools/state_sweep.py): a 0-d output the delegate stores without a resize, and bound outputs it
    writes in place, went into the program's constant - the outputs drifting from call to call and
    from method to method. Now the delegate refuses before anything runs."""
    p = rt.load_program(mutated_u32("xnn_scalar_io", 444, 4, 0))
    inputs = method_inputs(reference("xnn_scalar_io"), "forward")
    for _ in range(2):
        with pytest.raises(en.ExecutionError, match="XNNPACK delegate output 0 is a constant of the program"):
            p.load_method("forward")(inputs)


def test_convolution_window_past_an_empty_input(rt):
    """half_xnn with its input's height declared 0 (fuzz_loader --sweep): a padded 3x3 window over no
    rows gave one output row read past the padded copy (ASan: heap-buffer-overflow); no output row
    fits, so the node fails."""
    m = kept_input_method(rt, "crash-conv-window-past-empty-input")
    with pytest.raises(en.ExecutionError, match="output would be empty"):
        m([np.zeros((1, 3, 0, 24), np.float16)])


def test_op_coverage_tool():
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, os.path.join(root, "tools", "op_coverage.py"), model_path("small_cnn"),
                        model_path("mlp_xnn")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok      aten::convolution.out" in r.stdout and "ok      delegate XnnpackBackend" in r.stdout


def test_unknown_xnnpack_node_type(rt):
    """An XNNode union tag this runtime does not know is OperatorNotFound at load, not a crash."""
    import struct
    blob = bytearray(data("mlp_xnn"))
    base = blob.find(b"XH00") - 4
    fb_off = struct.unpack_from("<I", blob, base + 10)[0]
    fb = base + fb_off
    root = fb + struct.unpack_from("<I", blob, fb)[0]
    vt = root - struct.unpack_from("<i", blob, root)[0]
    xnodes_field = struct.unpack_from("<H", blob, vt + 4 + 2 * 1)[0]
    vec = root + xnodes_field + struct.unpack_from("<I", blob, root + xnodes_field)[0]
    node = vec + 4 + struct.unpack_from("<I", blob, vec + 4)[0]
    nvt = node - struct.unpack_from("<i", blob, node)[0]
    type_off = struct.unpack_from("<H", blob, nvt + 4)[0]
    blob[node + type_off] = 200  # xnode_union_type
    with pytest.raises(en.OperatorNotFound, match="node type 200") as e:
        rt.load_program(bytes(blob)).load_method("forward")
    assert e.value.detail == "XnnpackBackend:XNNNode200"


def test_run_into_checks_destinations(rt):
    """etnp_method_run_into (the one-call path for static outputs) refuses destinations of the wrong
    size or count with a clear error, and fills correct ones with what the method returns."""
    from executorch_numpy_runtime._native import ffi, lib
    m = rt.load_program(model_path("mlp")).load_method("forward")
    x = method_inputs(reference("mlp"), "forward")[0]
    want = m([x])[0]
    cin = m._cin
    item = m._cin_items[0]
    data = ffi.from_buffer("char[]", x)
    item.data, item.nbytes = data, x.nbytes
    out = np.empty_like(want)
    buf = ffi.from_buffer(out)
    ptrs = ffi.new("void *[]", [buf])
    ok = ffi.new("size_t[]", [out.nbytes])
    assert lib.etnp_method_run_into(m._ptr, cin, 1, ptrs, ok, 1) == 0
    np.testing.assert_array_equal(out, want)
    bad = ffi.new("size_t[]", [out.nbytes - 4])
    assert lib.etnp_method_run_into(m._ptr, cin, 1, ptrs, bad, 1) != 0
    assert "destination" in ffi.string(lib.etnp_last_error_message()).decode()
    assert lib.etnp_method_run_into(m._ptr, cin, 1, ptrs, ok, 2) != 0
    assert "2 destinations" in ffi.string(lib.etnp_last_error_message()).decode()
