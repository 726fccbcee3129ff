"""The exception hierarchy, and translation of the core's status codes into it."""
from __future__ import annotations


class ExecuTorchError(RuntimeError):
    """Base class of every error this runtime raises."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        #: the missing operator / backend / method name, when the error is about one
        self.detail = detail


class ProgramLoadError(ExecuTorchError):
    """Malformed, corrupt, truncated or version-incompatible .pte file."""


class BackendNotAvailable(ExecuTorchError):
    """The program is lowered to a delegate this runtime does not include."""


class OperatorNotFound(ExecuTorchError):
    """An operator the program needs has no kernel in this runtime."""


class ExecutionError(ExecuTorchError):
    """Failure while executing: wrong inputs, or a kernel error."""


class MethodNotFound(ExecutionError, KeyError):
    """A method name the program does not have. Also a KeyError, as ``executorch.runtime``'s
    ``Program.load_method`` raises for an unknown name."""

    __str__ = BaseException.__str__  # the message as it is (KeyError's would quote it)


# status codes of native/include/etnp.h
_BY_CODE = {1: ProgramLoadError, 2: BackendNotAvailable, 3: OperatorNotFound, 4: ExecutionError,
            5: ExecutionError, 6: ExecuTorchError, 7: ExecutionError}  # 7: a call stopped (cancel, timeout...)


def error_for(code: int, message: str, detail: str = "") -> ExecuTorchError:
    return _BY_CODE.get(code, ExecuTorchError)(message, detail)
