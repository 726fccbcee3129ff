"""The packed-weight cache (issue #32 deliverable 7): load_program(..., weight_cache=...) writes the
XNNPACK delegates' packed weights after a load that packed them and maps them read-only on later
loads (outputs bit-identical, nothing packed: memory_stats' mapped_weights); a stale, damaged or
foreign file is a miss and is rewritten, never a crash; processes loading one program share one
resident copy of its packed weights."""
import os
import pickle
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import executorch_numpy_runtime as en
from conftest import assert_matches, method_inputs, method_outputs, model_path, reference, run_with_cpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import fuzz_python  # noqa: E402  (the cache format's hash, to reseal mutated files)

sys.path.pop(0)

# float (with fused pipelines), static int8, dynamic int8, 4-bit, float convolution regimes, Winograd filters (2-D, 1-D), trimmed filters
PROGRAMS = ["mobilenet_v2_xnn", "qcnn_static_xnn", "qlinear_dyn_xnn", "q8da4w_xnn", "conv_regimes_xnn",
            "channels_last_xnn", "winograd_xnn", "winograd1d_xnn", "dead_taps_xnn"]
SMALL = "qcnn_static_xnn"


def _load(name, cache, rt=None):
    rt = rt or en.Runtime.get()
    m = rt.load_program(model_path(name), weight_cache=cache).load_method("forward")
    return m, m(method_inputs(reference(name), "forward"))


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert np.asarray(x).dtype == np.asarray(y).dtype
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("name", PROGRAMS)
def test_hit_is_bit_identical_and_packs_nothing(tmp_path, name):
    cache = str(tmp_path / "w.etnpwc")
    plain, want = _load(name, None)
    assert plain.memory_stats()["mapped_weights"] == 0
    assert not os.path.exists(cache)
    first, got1 = _load(name, cache)  # a miss: packs, then writes the file
    assert os.path.getsize(cache) > 0
    s1 = first.memory_stats()
    assert s1["mapped_weights"] == 0 and s1["packed_weights"] == plain.memory_stats()["packed_weights"]
    hit, got2 = _load(name, cache)
    s2 = hit.memory_stats()
    # every packed array is a view of the file: only the (copied) biases are the delegate's own
    assert s2["mapped_weights"] >= s1["packed_weights"] - s2["packed_weights"] > 0
    assert s2["packed_weights"] < s1["packed_weights"] // 4 + 4096
    assert s2["constants"] <= s1["constants"]  # the filters are not decoded or kept either
    _same(got1, want)
    _same(got2, want)
    # calls after the first too (state the first call planned)
    _same(hit(method_inputs(reference(name), "forward")), want)


def test_no_cache_leaves_no_file(tmp_path):
    shutil.copy(model_path(SMALL), tmp_path / "p.pte")
    m = en.Runtime.get().load_program(str(tmp_path / "p.pte")).load_method("forward")
    assert m.memory_stats()["mapped_weights"] == 0
    assert os.listdir(tmp_path) == ["p.pte"]


def test_default_paths(tmp_path, monkeypatch):
    shutil.copy(model_path(SMALL), tmp_path / "p.pte")
    monkeypatch.delenv("ETNP_WEIGHT_CACHE_DIR", raising=False)
    rt = en.Runtime.get()
    rt.load_program(str(tmp_path / "p.pte"), weight_cache=True).load_method("forward")
    assert os.path.exists(tmp_path / "p.pte.etnpwc")
    d = tmp_path / "caches"
    d.mkdir()
    monkeypatch.setenv("ETNP_WEIGHT_CACHE_DIR", str(d))
    rt.load_program(str(tmp_path / "p.pte"), weight_cache=True).load_method("forward")
    (f,) = os.listdir(d)
    assert f.startswith("p.pte.") and f.endswith(".etnpwc")
    m = rt.load_program(str(tmp_path / "p.pte"), weight_cache=True).load_method("forward")
    assert m.memory_stats()["mapped_weights"] > 0
    with pytest.raises(ValueError, match="weight_cache=True needs a program path"):
        rt.load_program(open(model_path(SMALL), "rb").read(), weight_cache=True)
    with pytest.raises(TypeError):
        rt.load_program(model_path(SMALL), weight_cache=3)
    # bytes with an explicit cache path
    m = rt.load_program(open(model_path(SMALL), "rb").read(), weight_cache=str(d / f)).load_method("forward")
    assert m.memory_stats()["mapped_weights"] > 0


def test_stale_cache_is_rebuilt_and_keeps_other_programs(tmp_path):
    cache = str(tmp_path / "w.etnpwc")
    _load("qlinear_dyn_xnn", cache)  # the file now holds another program's packed weights
    before = open(cache, "rb").read()
    m, got = _load(SMALL, cache)  # (a miss: rewritten)
    assert m.memory_stats()["mapped_weights"] == 0
    _same(got, _load(SMALL, None)[1])
    assert open(cache, "rb").read() != before
    for name in (SMALL, "qlinear_dyn_xnn"):  # both sections now: both hit
        m, got = _load(name, cache)
        assert m.memory_stats()["mapped_weights"] > 0, name
        _same(got, _load(name, None)[1])


def _damaged(good):
    n = len(good)
    yield "empty", b""
    yield "random", bytes(np.random.default_rng(0).integers(0, 256, n, dtype=np.uint8))
    for cut in (8, 63, 64, n // 2, n - 1):
        yield f"truncated to {cut}", good[:cut]
    yield "extended", good + b"\0" * 100
    for at in (0, 12, 40, 80, n // 2, n - 40, n - 1):  # magic, versions, cpu key, data, table
        b = bytearray(good)
        b[at] ^= 0x5A
        yield f"byte {at} flipped", bytes(b)


@pytest.mark.parametrize("name", [SMALL, "q8da4w_xnn"])
def test_damaged_or_foreign_files_are_misses(tmp_path, name):
    cache = str(tmp_path / "w.etnpwc")
    want = _load(name, None)[1]
    _load(name, cache)
    good = open(cache, "rb").read()
    for what, data in _damaged(good):
        with open(cache, "wb") as fh:
            fh.write(data)
        m, got = _load(name, cache)
        assert m.memory_stats()["mapped_weights"] == 0, what
        _same(got, want)
        assert open(cache, "rb").read() == good, what  # rewritten as the good file
    # a file where a cache file should be that cannot be read as one: a directory
    os.unlink(cache)
    os.mkdir(cache)
    m, got = _load(name, cache)
    assert m.memory_stats()["mapped_weights"] == 0
    _same(got, want)


def test_unwritable_cache_is_no_error(tmp_path):
    m, got = _load(SMALL, str(tmp_path / "missing-folder" / "w.etnpwc"))
    assert m.memory_stats()["mapped_weights"] == 0
    _same(got, _load(SMALL, None)[1])


def test_resealed_mutations_never_crash(tmp_path):
    """Mutations with their hashes recomputed reach the section parser: each load is a miss
    (rewritten) or a hit on sizes that fit the graph; none crashes (tools/fuzz_python.py's wcache
    format runs more of these)."""
    t = fuzz_python.WeightCacheTarget()
    assert all(fuzz_python.wc_reseal(s) == s for s in t.seeds())  # the hash is the core's
    outcomes = set()
    for i in range(150):
        outcomes.add(t.run(t.generate(3, i), i, str(tmp_path)).split(",")[0])
    assert outcomes == {"ran (hit)", "ran (miss)"}, outcomes


def test_another_cpu_path_is_a_miss(tmp_path):
    cache = str(tmp_path / "w.etnpwc")
    _load("q8da4w_xnn", cache)  # this machine's CPU path
    script = textwrap.dedent("""
        import sys, numpy as np
        sys.path.insert(0, sys.argv[1])
        import executorch_numpy_runtime as en
        from conftest import method_inputs, model_path, reference
        rt = en.Runtime.get()
        def load():
            m = rt.load_program(model_path("q8da4w_xnn"), weight_cache=sys.argv[2]).load_method("forward")
            return m.memory_stats()["mapped_weights"], m(method_inputs(reference("q8da4w_xnn"), "forward"))
        a, out_a = load()
        b, out_b = load()
        plain = rt.load_program(model_path("q8da4w_xnn")).load_method("forward")(
            method_inputs(reference("q8da4w_xnn"), "forward"))
        assert all(np.array_equal(x, y) and np.array_equal(x, z) for x, y, z in zip(out_a, out_b, plain))
        print("MAPPED", a, b)
    """)
    r = run_with_cpu("generic", script, cache)
    assert r.returncode == 0, r.stderr
    a, b = map(int, r.stdout.split("MAPPED")[1].split())
    assert a == 0 and b > 0  # rewritten for the generic path, then a hit there
    m, _ = _load("q8da4w_xnn", cache)  # and back on this machine's path: a miss again
    assert m.memory_stats()["mapped_weights"] == 0


def test_pickled_program_keeps_its_cache(tmp_path):
    cache = str(tmp_path / "w.etnpwc")
    prog = en.Runtime.get().load_program(model_path(SMALL), weight_cache=cache)
    prog.load_method("forward")
    again = pickle.loads(pickle.dumps(prog))
    assert again._weight_cache == cache
    assert again.load_method("forward").memory_stats()["mapped_weights"] > 0


WORKER = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import executorch_numpy_runtime as en
    from conftest import method_inputs, model_path, reference
    m = en.Runtime(num_threads=1).load_program(model_path(sys.argv[2]), weight_cache=sys.argv[3] or None)
    m = m.load_method("forward")
    m(method_inputs(reference(sys.argv[2]), "forward"))
    print("READY", m.memory_stats()["mapped_weights"], flush=True)
    sys.stdin.readline()  # (all workers alive: their shared pages are divided among them)
    r = {}
    with open("/proc/self/smaps_rollup") as fh:
        for line in fh:
            p = line.split()
            if len(p) >= 2 and p[0].endswith(":") and p[1].isdigit():
                r[p[0][:-1]] = int(p[1]) * 1024
    print("MEM", r["Rss"], r["Pss"], flush=True)
""")


def _workers(n, name, cache):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(en.__file__)))
    tests = os.path.dirname(os.path.abspath(__file__))
    ps = [subprocess.Popen([sys.executable, "-c", WORKER, tests, name, cache], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tests)
          for _ in range(n)]
    mapped = []
    for p in ps:
        line = p.stdout.readline()
        assert line.startswith("READY"), p.communicate()[1]
        mapped.append(int(line.split()[1]))
    out = []
    for p in ps:
        o, e = p.communicate("\n", timeout=300)
        assert p.returncode == 0, e
        rss, pss = map(int, o.split("MEM")[1].split())
        out.append((rss, pss))
    return mapped, out


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="needs Linux smaps_rollup")
def test_worker_processes_share_the_packed_weights(tmp_path):
    """4 processes hitting one cache file: the mapped packed weights are resident once, so each
    process's proportional share (Pss) is below its RSS by about 3/4 of them (bound: 1/2)."""
    name = "mobilenet_v2_xnn"  # 14 MB of packed weights
    cache = str(tmp_path / "w.etnpwc")
    _load(name, cache)
    mapped, mem = _workers(4, name, cache)
    assert all(m == mapped[0] > 10 << 20 for m in mapped), mapped
    for rss, pss in mem:
        assert rss - pss > mapped[0] // 2, (rss, pss, mapped[0])


def test_concurrent_first_loads_write_one_good_file(tmp_path):
    """4 processes loading with no cache file yet: each packs and writes its own temporary and
    renames it over the path; the file is then whole (a hit) and no temporary is left."""
    cache = str(tmp_path / "w.etnpwc")
    mapped, _ = _workers(4, "q8da4w_xnn", cache)
    assert os.listdir(tmp_path) == ["w.etnpwc"]
    m, got = _load("q8da4w_xnn", cache)
    assert m.memory_stats()["mapped_weights"] > 0
    _same(got, _load("q8da4w_xnn", None)[1])


def _constant_program(k=512, n=2048, write_weight=False):
    """forward(x [1, k]) = mm(x, W) with W [k, n] float32 a constant read in place by a portable
    kernel (4 MiB: one run of constants). write_weight: a second instruction has W as its out
    (add.out(y, y, 1, out=W)) - a malformed program, which must not crash."""
    from pte_build import F32, Program
    rng = np.random.default_rng(5)
    w = rng.standard_normal((k, n)).astype(np.float32)
    p = Program()
    x = p.tensor(F32, [1, k], planned=True)
    wv = p.tensor(F32, [k, n], const=w.tobytes())
    o = p.tensor(F32, [1, n], planned=True)
    p.call(p.op("aten::mm", "out"), [x, wv, o, o])
    p.inputs, p.outputs = [x], [o]
    if write_weight:
        y = p.tensor(F32, [k, n], planned=True)
        p.call(p.op("aten::add", "out"), [y, y, p.int(1), wv, wv])
    return p.to_bytes(), w


@pytest.mark.parametrize("use_mmap", [False, True])
def test_constants_read_in_place_are_shared_through_the_cache(tmp_path, use_mmap):
    data, w = _constant_program()
    path, cache = tmp_path / "c.pte", str(tmp_path / "c.etnpwc")
    path.write_bytes(data)
    x = np.random.default_rng(6).standard_normal((1, 512)).astype(np.float32)
    rt = en.Runtime(num_threads=1)
    first = rt.load_program(str(path), weight_cache=cache, mmap=use_mmap).load_method("forward")
    want = first([x])[0]
    np.testing.assert_allclose(want, x @ w, rtol=1e-4, atol=1e-3)
    s1 = first.memory_stats()
    assert s1["mapped_weights"] == 0
    hit = rt.load_program(str(path), weight_cache=cache, mmap=use_mmap).load_method("forward")
    s2 = hit.memory_stats()
    np.testing.assert_array_equal(hit([x])[0], want)
    if use_mmap:  # (a mapping's pages are shared already: nothing written for them, nothing viewed)
        assert s2["mapped_weights"] == 0 and not os.path.exists(cache)
    else:  # W viewed in the cache's mapping, the program's copy of it given back
        assert s2["mapped_weights"] >= w.nbytes, s2
        assert s2["program_bytes"] <= s1["program_bytes"] - w.nbytes + 65536, (s1, s2)
        # a third load reads the given-back bytes back (checked) where it needs them: the same
        np.testing.assert_array_equal(rt.load_program(str(path)).load_method("forward")([x])[0], want)


def test_constants_an_instruction_writes_are_not_shared(tmp_path):
    data, _ = _constant_program(write_weight=True)
    path, cache = tmp_path / "c.pte", str(tmp_path / "c.etnpwc")
    path.write_bytes(data)
    x = np.ones((1, 512), np.float32)
    rt = en.Runtime(num_threads=1)
    # the call refuses to write a constant (it would change W for every later call and method)
    for _ in range(2):
        with pytest.raises(en.ExecutionError, match=r"aten::add.out \(instruction 1\): output tensor \[512, 2048\] "
                                                     r"is a constant of the program"):
            rt.load_program(str(path), weight_cache=cache).load_method("forward")([x])
    hit = rt.load_program(str(path), weight_cache=cache).load_method("forward")
    assert hit.memory_stats()["mapped_weights"] == 0  # W stays the program's bytes: not in the read-only mapping
    with pytest.raises(en.ExecutionError, match="is a constant of the program"):
        hit([x])


def test_cache_is_written_only_from_named_data_that_matches_its_keys(tmp_path):
    """ExecuTorch names each XNNPACK constant by the SHA-256 of its bytes, and a hit reads no
    weights: a cache packed from a damaged data file would be taken, once the file is repaired, for
    the packing of the right bytes. On a miss the named data is checked against its keys first;
    where it does not match, the cache is not written (the load itself runs on what it read)."""
    import hashlib
    import re
    name = "mlp_external_xnn"
    good = open(model_path(name)[:-len(".pte")] + ".ptd", "rb").read()
    keys = {k.decode() for k in re.findall(rb"[0-9a-f]{64}", good)}
    at = next(o for n in (2048, 1024) for o in range(0, len(good) - n + 1, 16)
              if hashlib.sha256(good[o:o + n]).hexdigest() in keys)  # a named constant's bytes
    bad = bytearray(good)
    bad[at + 3] ^= 0x40  # (a float's exponent)
    pte, data, cache = tmp_path / "m.pte", tmp_path / "m.ptd", str(tmp_path / "m.etnpwc")
    shutil.copy(model_path(name), pte)
    ref = reference(name)

    def load():
        return en.Runtime.get().load_program(str(pte), data_files=[str(data)], weight_cache=cache).load_method("forward")

    want = method_outputs(ref, "forward")
    data.write_bytes(bytes(bad))
    damaged = load()(method_inputs(ref, "forward"))
    assert not np.allclose(damaged[0], want[0], atol=1e-3)  # (the damage reaches a weight)
    data.write_bytes(good)
    repaired = load()
    assert repaired.memory_stats()["mapped_weights"] == 0  # a miss: packed from the repaired file
    assert_matches(repaired(method_inputs(ref, "forward")), want, 1e-5, 1e-4)
    hit = load()  # (written by the load before)
    assert hit.memory_stats()["mapped_weights"] > 0
    assert_matches(hit(method_inputs(ref, "forward")), want, 1e-5, 1e-4)
