"""Reading a method's inputs from a .npz for the CLI, safely.

Every array's shape and dtype are read from its .npy header inside the zip and checked against
the method's signature before anything is decompressed (a small compressed file cannot expand
to gigabytes first). Problems raise ``InputsError`` with one clear line.
"""
from __future__ import annotations

import os
import zipfile
from typing import Dict, List, Sequence, Tuple

import numpy as np
from numpy.lib import format as npformat


class InputsError(ValueError):
    """A missing, corrupt or mismatching inputs file."""


def _headers(path: str) -> Dict[str, Tuple[Tuple[int, ...], np.dtype]]:
    """key -> (shape, dtype) of every array in the .npz, from the headers only."""
    if not os.path.exists(path):
        raise InputsError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputsError(f"{path} is a directory, not a .npz file")
    out = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                with zf.open(info) as f:
                    version = npformat.read_magic(f)
                    if version == (1, 0):
                        shape, _, dtype = npformat.read_array_header_1_0(f)
                    else:
                        shape, _, dtype = npformat.read_array_header_2_0(f)
                out[key] = (tuple(int(d) for d in shape), dtype)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, KeyError) as e:
        raise InputsError(f"{path} is not a valid .npz file ({type(e).__name__}: {e})") from None
    return out


def _keys(files: Sequence[str], method: str, n: int) -> List[str]:
    keys = [f"{method}:in:{i}" for i in range(n)]
    if all(k in files for k in keys):
        return keys
    plain = [f"input_{i}" for i in range(n)]
    if all(k in files for k in plain):
        return plain
    if len(files) == n:
        return list(files)
    raise InputsError(f"the .npz has keys {list(files)}; expected {keys} or {plain}")


def _check(path: str, key: str, i: int, shape, dtype: np.dtype, meta, stacked: bool) -> None:
    if dtype.hasobject:
        raise InputsError(f"{path}: array {key!r} holds Python objects, not numbers")
    if meta.kind != "tensor":
        if (shape[1:] if stacked else shape) not in ((), (1,)):
            raise InputsError(f"{path}: array {key!r} has shape {shape}; input {i} is a single {meta.kind}")
        return
    want = np.dtype(np.uint16) if meta.dtype == "bfloat16" else np.dtype(meta.dtype)
    if dtype != want and not (meta.dtype == "bfloat16" and dtype.itemsize == 2):
        raise InputsError(f"{path}: array {key!r} has dtype {dtype}; input {i} expects {meta}")
    item = shape[1:] if stacked else shape
    if stacked and not shape:
        raise InputsError(f"{path}: array {key!r} is 0-d; a stacked batch needs a leading items dimension")
    ok = len(item) == len(meta.shape) and all(
        (s <= b if meta.dynamic else s == b) for s, b in zip(item, meta.shape))
    if not ok:
        what = "each item has" if stacked else "it has"
        raise InputsError(f"{path}: array {key!r}: {what} shape {list(item)}; input {i} expects {meta}")


def read_inputs(path: str, method: str, metas: Sequence, stacked: bool = False) -> List[np.ndarray]:
    """The method's inputs from PATH (for ``stacked``: arrays with a leading items dimension)."""
    headers = _headers(path)
    keys = _keys(list(headers), method, len(metas))
    for i, (key, meta) in enumerate(zip(keys, metas)):
        shape, dtype = headers[key]
        _check(path, key, i, shape, dtype, meta, stacked)
    if stacked and keys:
        counts = {headers[k][0][0] for k in keys}
        if len(counts) > 1:
            raise InputsError(f"{path}: the stacked arrays have different item counts {sorted(counts)}")
    try:
        with np.load(path, allow_pickle=False) as z:
            return [z[k] for k in keys]
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as e:
        raise InputsError(f"{path}: cannot read its arrays ({type(e).__name__}: {e})") from None
