"""A committed subset of the real-model zoo (tools/zoo_export.py; the whole zoo is regenerated
outside the repo and compared with tools/zoo_compare.py): real architectures exported with
seeded random weights, run here against their torch-eager references over every recorded call.

Criteria (those of zoo_compare, against torch here since the published runtime is not a test
dependency): fp32 recipes 1e-4 of the output's largest magnitude; static int8 within 3 steps of
the output's quantisation grid; dynamically quantised recipes (int8 activations quantised per
row at run time, 4-bit weights) 3e-2 relative: the recipe itself is that far from float torch
(the published ExecuTorch runtime differs from torch by the same ~1e-2; from ours by < 1e-5)."""
import glob
import json
import os

import numpy as np
import pytest

ZOO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "zoo")
NAMES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ZOO, "*.pte")))


def load(name):
    with np.load(os.path.join(ZOO, name + ".npz")) as z:
        meta = json.loads(str(z["meta"]))
        calls = []
        for k in range(meta["calls"]):
            n_in = len([f for f in z.files if f.startswith(f"forward:call{k}:in:")])
            n_out = len([f for f in z.files if f.startswith(f"forward:call{k}:out:")])
            calls.append(([z[f"forward:call{k}:in:{i}"] for i in range(n_in)],
                          [z[f"forward:call{k}:out:{i}"] for i in range(n_out)]))
    return meta, calls


def test_subset_is_representative():
    recipes = {load(n)[0]["recipe"] for n in NAMES}
    assert len(NAMES) >= 10
    for want in ("fp32-xnn", "int8-static-xnn", "int8-dyn-xnn", "8da4w-xnn", "kv-cache-xnn", "ext-8da4w-xnn"):
        assert want in recipes, want


@pytest.mark.parametrize("name", NAMES)
def test_zoo_program_matches_torch(rt, name):
    meta, calls = load(name)
    data = [os.path.join(ZOO, f) for f in meta.get("data_files", [])]
    method = rt.load_program(os.path.join(ZOO, name + ".pte"), data_files=data).load_method("forward")
    recipe = meta["recipe"]
    steps = meta.get("out_steps") or []
    for k, (ins, refs) in enumerate(calls):
        outs = method(ins)
        assert len(outs) == len(refs)
        for i, (o, r) in enumerate(zip(outs, refs)):
            o = np.asarray(o, dtype=np.float64)
            r = np.asarray(r, dtype=np.float64)
            assert o.shape == r.shape, f"{name} call {k} output {i}: {o.shape} != {r.shape}"
            err, scale = float(np.abs(o - r).max()), float(np.abs(r).max()) or 1.0
            step = steps[i] if i < len(steps) else None
            if recipe.startswith("int8-static") and step:
                assert err <= 3 * step, f"{name} call {k} output {i}: {err} > 3 steps of {step}"
            elif "8da" in recipe or "int8-dyn" in recipe:
                assert err <= 3e-2 * scale, f"{name} call {k} output {i}: relative {err / scale}"
            else:
                assert err <= 1e-4 * scale, f"{name} call {k} output {i}: relative {err / scale}"
