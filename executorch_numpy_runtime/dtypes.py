"""The dtype table: ExecuTorch ScalarType codes <-> numpy dtypes.

bfloat16 crosses as uint16 bits; when ml_dtypes is installed (the ``bf16`` extra),
``ml_dtypes.bfloat16`` arrays are accepted and bfloat16 outputs come back as that dtype.
"""
from __future__ import annotations

import numpy as np

try:  # optional
    import ml_dtypes as _ml_dtypes

    BFLOAT16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _ml_dtypes = None
    BFLOAT16 = None

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
if BFLOAT16 is not None:
    _NP_TO_CODE[BFLOAT16] = BF16_CODE

SUPPORTED_DTYPES = [_NAMES[k] for k in sorted(_NAMES)]


def bfloat16_mode() -> str:
    return "ml_dtypes" if BFLOAT16 is not None else "uint16-passthrough"


def dtype_name(code: int) -> str:
    return _NAMES.get(code, f"ScalarType({code})")


def to_numpy(code: int) -> np.dtype:
    """The numpy dtype outputs of ScalarType ``code`` come back as."""
    if code == BF16_CODE and BFLOAT16 is not None:
        return BFLOAT16
    try:
        return _CODE_TO_NP[code]
    except KeyError:
        raise TypeError(f"dtype {dtype_name(code)} has no numpy equivalent") from None


def from_numpy(dt: np.dtype):
    """ScalarType code of a numpy dtype (uint16 means bfloat16), or None."""
    return _NP_TO_CODE.get(np.dtype(dt))
