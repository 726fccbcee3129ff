"""Stand-in for `executorch.extension.pybindings.portable_lib` when the wheel's own cannot load.

The wheel's pybindings are built against another torch and fail to import (undefined c10
symbol), and some test helpers import them unguarded at module top (test_xnnpack_utils.py,
imported by test_batch_norm/conv1d/conv2d only for randomize_bn). Installed only after the real
import failed, this module offers the loaders those helpers call, executing in the runtime
worker; any other name is missing, so `from ... import other` still raises ImportError as before.
"""

import enum
import sys
import types

MODULE = "executorch.extension.pybindings.portable_lib"


class Verification(enum.IntEnum):
    Minimal = 0
    InternalConsistency = 1


class OutOfProcessModule:
    """The subset of pybindings' ExecuTorchModule used by tests: run_method, forward, __call__."""

    def __init__(self, buffer, run):
        self._buffer = bytes(buffer)
        self._run = run

    def run_method(self, method_name, inputs, clone_outputs=True):
        return self._run(self._buffer, method_name, inputs)

    def forward(self, inputs, clone_outputs=True):
        return self.run_method("forward", inputs)

    def __call__(self, inputs, clone_outputs=True):
        return self.run_method("forward", inputs)


def install(run):
    """Put the stand-in in sys.modules; run(buffer, method, inputs) executes a program."""

    mod = types.ModuleType(MODULE, __doc__)
    mod.__file__ = __file__
    mod.Verification = Verification
    mod._etc_stub = True

    def _load_for_executorch_from_buffer(buffer, *args, **kwargs):
        return OutOfProcessModule(buffer, run)

    def _load_for_executorch(path, *args, **kwargs):
        with open(path, "rb") as f:
            return OutOfProcessModule(f.read(), run)

    mod._load_for_executorch_from_buffer = _load_for_executorch_from_buffer
    mod._load_for_executorch = _load_for_executorch
    sys.modules[MODULE] = mod
    parent = sys.modules.get(MODULE.rsplit(".", 1)[0])
    if parent is not None:
        setattr(parent, "portable_lib", mod)
    return mod
