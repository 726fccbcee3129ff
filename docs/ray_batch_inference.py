#!/usr/bin/env python3
"""Batch inference with Ray Data over executorch-numpy-runtime (no torch anywhere).

    pip install "executorch-numpy-runtime[ray]"
    python -m executorch_numpy_runtime example --save model.pte
    python docs/ray_batch_inference.py model.pte

Each Ray worker builds one Predictor (loads the model once, 1 native thread) and maps batches of
numpy columns to output columns. On a cluster, replace ray.init(num_cpus=2) with ray.init() (or
ray.init(address="auto")) and put model.pte where every node can read it (or pass its bytes:
fn_constructor_kwargs={"model": open("model.pte", "rb").read()}).
"""
import sys

import numpy as np
import ray

from executorch_numpy_runtime import Predictor


def main(model: str, rows: int = 200) -> None:
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        probe = Predictor(model)
        (name,), (shape,) = probe.input_names, [v.shape for v in probe.method.metadata.inputs]
        rng = np.random.default_rng(0)
        items = [{name: rng.standard_normal(shape[1:]).astype(np.float32), "id": i} for i in range(rows)]
        ds = ray.data.from_items(items)
        out = ds.map_batches(Predictor, fn_constructor_kwargs={"model": model, "passthrough": ["id"]},
                             batch_format="numpy", batch_size=32, concurrency=2)
        result = out.take_all()
        print(f"{len(result)} rows; columns {sorted(result[0])}; first output row {result[0][probe.output_names[0]]}")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "model.pte")
