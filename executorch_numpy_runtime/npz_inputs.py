"""Reading a method's inputs from a .npz for the CLI, safely.

Only a regular file is opened (a device or FIFO is refused before any read: it could be endless
or block), once. Every array's shape and dtype are read from its .npy header inside the zip and
checked against the method's signature before anything is decompressed (a small compressed file
cannot expand to gigabytes first). Problems raise ``InputsError`` with one clear line.

Keys (``KEY_RULE``): input i is ``METHOD:in:i``, ``input_i``, ``in<i>`` or ``arr_i`` (what
``np.savez(*arrays)`` writes), or the method's own name for it (``method.input_names``); keys are
matched by name, never by their order in the archive. Unknown, missing and repeated inputs are
errors; keys a reference file keeps beside the inputs (``NAME:out:i``, other methods'
``NAME:in:i``) are ignored.
"""
from __future__ import annotations

import errno
import re
import zipfile
from typing import BinaryIO, Dict, List, Optional, Sequence, Tuple

import numpy as np
from numpy.lib import format as npformat

from .files import FileError, open_regular_file

KEY_RULE = ("arrays keyed by input index as METHOD:in:i, input_i, in<i> or arr_i (np.savez(*arrays)), "
            "or by the method's input names, in any order; unknown, missing or repeated inputs are errors")
_INDEX_KEY = re.compile(r"(?:input_|in|arr_)(0|[1-9][0-9]*)\Z")
_REFERENCE_KEY = re.compile(r".+:(?:in|out):(0|[1-9][0-9]*)\Z")


class InputsError(ValueError):
    """A missing, corrupt or mismatching inputs file."""


def _open(path: str) -> BinaryIO:
    try:
        return open_regular_file(path, "inputs file")
    except FileError as e:
        if e.errno == errno.ENOENT:
            raise InputsError(f"{path}: no such file") from None
        raise InputsError(str(e)) from None


def _headers(path: str, fh: BinaryIO) -> Dict[str, Tuple[Tuple[int, ...], np.dtype]]:
    """key -> (shape, dtype) of every array in the .npz (open as FH), from the headers only."""
    out = {}
    try:
        with zipfile.ZipFile(fh) as zf:
            for info in zf.infolist():
                key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                with zf.open(info) as f:
                    version = npformat.read_magic(f)
                    if version == (1, 0):
                        shape, _, dtype = npformat.read_array_header_1_0(f)
                    else:
                        shape, _, dtype = npformat.read_array_header_2_0(f)
                out[key] = (tuple(int(d) for d in shape), dtype)
    except MemoryError:
        raise
    except Exception as e:  # a corrupt archive or header: zipfile and numpy raise many kinds
        # (BadZipFile, RuntimeError for encryption, NotImplementedError for unknown compression,
        # tokenize.TokenError / SyntaxError for a header that is no Python literal, ...)
        raise InputsError(f"{path} is not a valid .npz file ({type(e).__name__}: {e})") from None
    return out


def _keys(path: str, files: Sequence[str], method: str, names: Sequence[str]) -> List[str]:
    """The key of each input, in input order (see the module's docstring for the rule)."""
    n = len(names)
    by_name = {name: i for i, name in enumerate(names)}
    prefix = f"{method}:in:"
    chosen: Dict[int, str] = {}
    unknown = []
    for key in files:
        i = by_name.get(key)
        if i is None:
            m = _INDEX_KEY.match(key) or (_REFERENCE_KEY.match(key) if key.startswith(prefix) else None)
            if m is None and _REFERENCE_KEY.match(key):
                continue  # a reference file's outputs and other methods' inputs
            i = int(m.group(1)) if m else None
        if i is None or i >= n:
            unknown.append(key)
        elif i in chosen:
            raise InputsError(f"{path}: input {i} given twice, as {chosen[i]!r} and {key!r}; {_accepted(method, names)}")
        else:
            chosen[i] = key
    if unknown:
        raise InputsError(f"{path}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
                          f"(the method has {n} input{'' if n == 1 else 's'}); {_accepted(method, names)}")
    missing = [i for i in range(n) if i not in chosen]
    if missing:
        raise InputsError(f"{path}: missing input {missing[0]} ({names[missing[0]]!r}); {_accepted(method, names)}")
    return [chosen[i] for i in range(n)]


def _accepted(method: str, names: Sequence[str]) -> str:
    return (f"input i is keyed '{method}:in:i', 'input_i', 'in<i>', 'arr_i' (as np.savez(*arrays) writes) "
            f"or by its name {list(names)}")


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


def read_inputs(path: str, method: str, metas: Sequence, stacked: bool = False,
                names: Optional[Sequence[str]] = None) -> List[np.ndarray]:
    """The method's inputs from PATH (for ``stacked``: arrays with a leading items dimension).
    ``names``: the method's input names (``method.input_names``; default ``input_<i>``)."""
    names = list(names) if names is not None else [f"input_{i}" for i in range(len(metas))]
    if len(names) != len(metas):
        raise ValueError(f"{len(names)} input names for {len(metas)} inputs")
    with _open(path) as fh:
        headers = _headers(path, fh)
        keys = _keys(path, list(headers), method, names)
        for i, (key, meta) in enumerate(zip(keys, metas)):
            shape, dtype = headers[key]
            _check(path, key, i, shape, dtype, meta, stacked)
        if stacked and keys:
            counts = {headers[k][0][0] for k in keys}
            if len(counts) > 1:
                raise InputsError(f"{path}: the stacked arrays have different item counts {sorted(counts)}")
        try:
            fh.seek(0)
            with np.load(fh, allow_pickle=False) as z:
                return [z[k] for k in keys]
        except MemoryError:
            raise
        except Exception as e:  # (as for the headers: whatever a corrupt member makes zipfile or numpy raise)
            raise InputsError(f"{path}: cannot read its arrays ({type(e).__name__}: {e})") from None
