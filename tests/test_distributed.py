"""Pickling programs and methods, the Predictor (Ray Data map_batches / Dask), and a real local Ray run."""
import concurrent.futures
import os
import pickle
import time

import numpy as np
import pytest

from conftest import method_inputs, method_outputs, model_path, reference
from executorch_numpy_runtime import Predictor, Runtime


def test_program_pickles_by_path_and_by_bytes():
    rt = Runtime.get()
    path = model_path("mlp")
    ref = reference("mlp")
    ins, want = method_inputs(ref, "forward"), method_outputs(ref, "forward")
    by_path = rt.load_program(path)
    blob = pickle.dumps(by_path)
    assert len(blob) < 1000  # the path, not the program
    by_bytes = rt.load_program(open(path, "rb").read())
    blob2 = pickle.dumps(by_bytes)
    assert len(blob2) > os.path.getsize(path) * 0.9
    for p in (pickle.loads(blob), pickle.loads(blob2)):
        np.testing.assert_allclose(p.load_method()(ins)[0], want[0], rtol=1e-4, atol=1e-5)
    m = pickle.loads(pickle.dumps(by_path.load_method()))
    np.testing.assert_allclose(m(ins)[0], want[0], rtol=1e-4, atol=1e-5)


def test_program_with_data_file_pickles():
    rt = Runtime.get()
    p = rt.load_program(model_path("mlp_external"), data_files=[model_path("mlp_external")[:-4] + ".ptd"])
    ref = reference("mlp_external")
    q = pickle.loads(pickle.dumps(p))
    np.testing.assert_allclose(q.load_method()(method_inputs(ref, "forward"))[0],
                               method_outputs(ref, "forward")[0], rtol=1e-4, atol=1e-5)


def _run_pickled(blob, batch):
    return pickle.loads(blob)(batch)


def test_predictor_in_a_process_pool():
    ref = reference("mlp")
    x = method_inputs(ref, "forward")[0]
    pred = Predictor(model_path("mlp"))
    batch = {"x": np.concatenate([x, x, x[:1]])}  # 9 rows for a model taking 4: chunks 4, 4, 1 (padded)
    local = pred(batch)
    assert list(local) == ["output_0"] and local["output_0"].shape[0] == 9
    np.testing.assert_allclose(local["output_0"][:4], method_outputs(ref, "forward")[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(local["output_0"][8], local["output_0"][0], rtol=1e-6)
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        remote = pool.submit(_run_pickled, pickle.dumps(pred), batch).result()
    np.testing.assert_array_equal(remote["output_0"], local["output_0"])


def test_predictor_named_columns_and_passthrough():
    pred = Predictor(model_path("mlp"), passthrough=["id"])
    xin = method_inputs(reference("mlp"), "forward")[0]
    res = pred({"features": xin, "id": np.arange(len(xin))})  # one input: any column name
    assert sorted(res) == ["id", "output_0"] and res["id"].tolist() == list(range(len(xin)))
    with pytest.raises(TypeError):
        pred([xin])
    named = Predictor(model_path("named_io"))
    assert named.input_names == ("input_0", "scale") and named.output_names == ("logits", "probs")
    with pytest.raises(Exception, match="no column 'scale'"):
        named({"input_0": np.zeros((2, 4), np.float32)})
    with pytest.raises(Exception, match="different numbers of rows"):
        Predictor(model_path("add"))({"input_0": np.zeros((2, 3), np.float32), "input_1": np.zeros((3, 3), np.float32)})


def test_predictor_rows_without_batch_dim():
    pred = Predictor(model_path("add"))  # add takes two [3] tensors: each row is one call
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = pred({"input_0": a, "input_1": a})
    np.testing.assert_array_equal(out["output_0"], 2 * a)


@pytest.mark.skipif(os.environ.get("ETNP_SKIP_RAY") == "1", reason="ETNP_SKIP_RAY=1")
def test_ray_map_batches_local_cluster():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        ref = reference("mlp")
        x = method_inputs(ref, "forward")[0]
        rows = np.concatenate([x] * 10)  # 40 rows
        ds = ray.data.from_items([{"x": r, "id": i} for i, r in enumerate(rows)])
        out = ds.map_batches(Predictor, fn_constructor_kwargs={"model": model_path("mlp"), "passthrough": ["id"]},
                             batch_format="numpy", batch_size=8, concurrency=2).take_all()
        assert len(out) == 40
        want = method_outputs(ref, "forward")[0]
        for row in out:
            np.testing.assert_allclose(row["output_0"], want[row["id"] % 4], rtol=1e-4, atol=1e-5)
        # by bytes: no shared file needed
        out2 = ray.data.from_items([{"x": r} for r in rows[:8]]).map_batches(
            Predictor, fn_constructor_kwargs={"model": open(model_path("mlp"), "rb").read()},
            batch_format="numpy", concurrency=1).take_all()
        assert len(out2) == 8
    finally:
        ray.shutdown()
    print(f"ray test: {time.perf_counter() - t0:.1f} s")


def test_dask_bag_processes():
    db = pytest.importorskip("dask.bag")
    ref = reference("mlp")
    x = method_inputs(ref, "forward")[0]
    pred = Predictor(model_path("mlp"))  # pickled to the worker processes, loaded again there
    batches = [{"x": x}, {"x": x * 2}, {"x": x[:3]}]
    got = db.from_sequence(batches, npartitions=3).map(pred).compute(scheduler="processes", num_workers=2)
    for b, g in zip(batches, got):
        np.testing.assert_allclose(g["output_0"], pred(b)["output_0"], rtol=1e-6)
