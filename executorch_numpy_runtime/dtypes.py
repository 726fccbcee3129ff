"""The dtype table: ExecuTorch ScalarType codes <-> numpy dtypes.

bfloat16 crosses as uint16 bits; when ml_dtypes is installed (the ``bf16`` extra),
``ml_dtypes.bfloat16`` arrays are accepted and bfloat16 outputs come back as that dtype.
"""
from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

_bf16: list = []  # [ml_dtypes.bfloat16 dtype or None] once looked up: ml_dtypes (~1 s to import) loads
                  # only when a bfloat16 value needs it, not with the package


def _bfloat16():
    """ml_dtypes' bfloat16 dtype (imported on first use), or None without ml_dtypes."""
    if not _bf16:
        try:
            import ml_dtypes

            dt = np.dtype(ml_dtypes.bfloat16)
            _NP_TO_CODE[dt] = BF16_CODE
        except ImportError:  # pragma: no cover - depends on the environment
            dt = None
        _bf16.append(dt)
    return _bf16[0]


def __getattr__(name: str) -> Any:  # dtypes.BFLOAT16, resolved lazily
    if name == "BFLOAT16":
        return _bfloat16()
    raise AttributeError(name)


BF16_CODE = 15
_CODE_TO_NP = {
    0: np.dtype(np.uint8),
    1: np.dtype(np.int8),
    2: np.dtype(np.int16),
    3: np.dtype(np.int32),
    4: np.dtype(np.int64),
    5: np.dtype(np.float16),
    6: np.dtype(np.float32),
    7: np.dtype(np.float64),
    9: np.dtype(np.complex64),
    10: np.dtype(np.complex128),
    11: np.dtype(np.bool_),
    BF16_CODE: np.dtype(np.uint16),
}
_NAMES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32", 7: "float64",
          9: "complex64", 10: "complex128", 11: "bool", BF16_CODE: "bfloat16"}
_NP_TO_CODE = {v: k for k, v in _CODE_TO_NP.items()}

SUPPORTED_DTYPES = [_NAMES[k] for k in sorted(_NAMES)]


def bfloat16_mode() -> str:
    if _bf16:
        return "ml_dtypes" if _bf16[0] is not None else "uint16-passthrough"
    return "ml_dtypes" if importlib.util.find_spec("ml_dtypes") is not None else "uint16-passthrough"


def dtype_name(code: int) -> str:
    return _NAMES.get(code, f"ScalarType({code})")


def to_numpy(code: int) -> np.dtype:
    """The numpy dtype outputs of ScalarType ``code`` come back as."""
    if code == BF16_CODE and _bfloat16() is not None:
        return _bf16[0]
    try:
        return _CODE_TO_NP[code]
    except KeyError:
        raise TypeError(f"dtype {dtype_name(code)} has no numpy equivalent") from None


def from_numpy(dt: np.dtype):
    """ScalarType code of a numpy dtype (uint16 means bfloat16), or None."""
    dt = np.dtype(dt)
    code = _NP_TO_CODE.get(dt)
    if code is None and dt.name == "bfloat16" and not _bf16:  # an ml_dtypes array: the caller imported it
        _bfloat16()
        code = _NP_TO_CODE.get(dt)
    return code
