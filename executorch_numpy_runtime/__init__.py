"""executorch-numpy-runtime: run ExecuTorch 1.3.1 .pte programs with numpy, without torch."""
from .errors import (BackendNotAvailable, ExecuTorchError, ExecutionError, MethodNotFound, OperatorNotFound,
                     ProgramLoadError)
from .custom_ops import register_op, registered_ops, unregister_op
from .info import runtime_info
from .runtime import Method, MethodMeta, Program, Runtime, ValueMeta
from .predictor import Predictor
from . import llm  # noqa: E402  (en.llm.Generator; imports nothing optional until used)

__version__ = "0.1.0"
__et_version__ = "1.3.1"

__all__ = [
    "llm", "Runtime", "Program", "Method", "MethodMeta", "ValueMeta", "runtime_info", "Predictor",
    "register_op", "unregister_op", "registered_ops",
    "ExecuTorchError", "ProgramLoadError", "BackendNotAvailable", "OperatorNotFound", "ExecutionError",
    "MethodNotFound",
    "__version__", "__et_version__",
]
