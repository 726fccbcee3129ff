"""runtime_info(): what this build of the runtime contains."""
from __future__ import annotations

from . import custom_ops, dtypes
from ._native import ffi, lib, names
from .runtime import Runtime


def runtime_info() -> dict:
    """What this build of the runtime contains (derived from the native registry)."""
    return {
        "version": ffi.string(lib.etnp_version()).decode(),
        "executorch_version": ffi.string(lib.etnp_et_version()).decode(),
        "backends": names(lib.etnp_num_backends, lib.etnp_backend_name),
        "operators": names(lib.etnp_num_operators, lib.etnp_operator_name),
        "kernel_libs": names(lib.etnp_num_kernel_libs, lib.etnp_kernel_lib_name),
        "supported_dtypes": list(dtypes.SUPPORTED_DTYPES),
        "bfloat16": dtypes.bfloat16_mode(),
        "cpu_features": ffi.string(lib.etnp_cpu_features()).decode(),
        "default_num_threads": Runtime.get().num_threads,
        "python_ops": custom_ops.registered_ops(),
    }
