"""``Predictor``: batch inference as Ray Data's ``map_batches`` and Dask expect it.

    ds.map_batches(Predictor, fn_constructor_kwargs={"model": "model.pte"},
                   batch_format="numpy", concurrency=2)

A Predictor is built once per worker with the model's path (or bytes), loads it on its own
Runtime (``num_threads`` per worker, default 1: one worker per core is how these frameworks scale)
and is called with a dict of numpy columns, returning a dict of numpy columns (the outputs by name,
``method.output_names``). Columns are matched to the method's inputs by name (``input_names``; a
method with one input also takes a single column of any name). Each column holds the batch's rows
along its first axis; the Predictor feeds the model as many rows at a time as its input's first
dimension allows (padding the last chunk, dropping the padding from the outputs), or one row at a
time when the model's input has no batch dimension (the column's rows are the model's input shape).
It pickles as its arguments and loads the model again where it is unpickled (Dask, process pools).
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from .errors import ExecutionError


class Predictor:
    def __init__(self, model: Union[str, "os.PathLike[str]", bytes], method: str = "forward",
                 num_threads: Optional[int] = 1, data_files: Optional[Sequence[Any]] = None,
                 passthrough: Sequence[str] = (), weight_cache: Any = None) -> None:
        from .runtime import Runtime

        self._args = (model, method, num_threads, tuple(data_files or ()), tuple(passthrough), weight_cache)
        self.runtime = Runtime(num_threads=num_threads)
        # (weight_cache: load_program's; workers on one machine then share one copy of the packed weights)
        self.program = self.runtime.load_program(model, data_files=list(data_files or ()) or None,
                                                 weight_cache=weight_cache)
        self.method = self.program.load_method(method)
        self.input_names = self.method.input_names
        self.output_names = self.method.output_names
        self.passthrough = tuple(passthrough)
        self._inputs = self.method.metadata.inputs
        if any(v.kind != "tensor" for v in self._inputs):
            raise ExecutionError(f"Predictor needs a method whose inputs are all tensors ({self.method.metadata})")

    def __reduce__(self):
        return (_rebuild, self._args)

    def _columns(self, batch: Dict[str, Any]) -> List[np.ndarray]:
        if not isinstance(batch, dict):
            raise TypeError(f"a Predictor takes a dict of numpy columns, not {type(batch).__name__}")
        names = self.input_names
        if len(names) == 1 and names[0] not in batch:
            data = [k for k in batch if k not in self.passthrough]
            if len(data) != 1:
                raise ExecutionError(f"the batch has columns {list(batch)}; the method's input is {names[0]!r}")
            return [np.asarray(batch[data[0]])]
        missing = [n for n in names if n not in batch]
        if missing:
            raise ExecutionError(f"the batch has no column {missing[0]!r} (columns: {list(batch)}; "
                                 f"inputs: {list(names)})")
        return [np.asarray(batch[n]) for n in names]

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, np.ndarray]:
        cols = self._columns(batch)
        rows = {len(c) for c in cols}
        if len(rows) != 1:
            raise ExecutionError(f"the batch's columns have different numbers of rows: {sorted(rows)}")
        n = rows.pop()
        per_row = [c.shape[1:] == tuple(v.shape) and not v.dynamic for c, v in zip(cols, self._inputs)]
        if all(per_row) or any(len(v.shape) == 0 for v in self._inputs):
            step = 1
        else:
            step = min(v.shape[0] for v, row in zip(self._inputs, per_row) if not row)
            if any(per_row) and step != 1:
                raise ExecutionError("the batch's columns mix rows of the model's input shape and batches of it; "
                                     f"the method takes {self.method.metadata}")
        results: List[List[Any]] = [[] for _ in self.output_names]
        for start in range(0, n, step):
            stop = min(start + step, n)
            feeds = []
            for c, v, row in zip(cols, self._inputs, per_row):
                if row and step == 1:
                    feeds.append(np.ascontiguousarray(c[start]))
                    continue
                chunk = c[start:stop]
                if len(chunk) < step and not v.dynamic:  # pad the last chunk to the model's batch
                    pad = np.zeros((step - len(chunk),) + chunk.shape[1:], chunk.dtype)
                    chunk = np.concatenate([chunk, pad])
                feeds.append(np.ascontiguousarray(chunk))
            outs = self.method(feeds)
            for k, o in enumerate(outs):
                o = np.asarray(o)
                results[k].append(o[None] if step == 1 and all(per_row) else o[:stop - start])
        out = {name: (np.concatenate(parts) if parts else np.empty((0,))) for name, parts in
               zip(self.output_names, results)}
        for name in self.passthrough:
            if name in batch:
                out[name] = np.asarray(batch[name])
        return out

    def __repr__(self) -> str:
        return f"Predictor({self._args[0]!r}, method={self._args[1]!r}, num_threads={self._args[2]})"


def _rebuild(*args: Any) -> Predictor:
    return Predictor(*args)
