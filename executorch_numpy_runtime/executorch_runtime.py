"""A drop-in for ``executorch.runtime`` (ExecuTorch 1.3.1's Python runtime API), over this runtime.

Code written against ExecuTorch's module runs with only its import changed::

    # from executorch.runtime import Runtime, Program, Method, Verification
    from executorch_numpy_runtime.executorch_runtime import Runtime, Program, Method, Verification

    program = Runtime.get().load_program(Path("/tmp/program.pte"))
    print("Program methods:", program.method_names)          # {'forward'}
    forward = program.load_method("forward")
    outputs = forward.execute((np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)))

The same names and shapes: ``Runtime.get()`` (a singleton), ``Runtime.backend_registry``
(``registered_backend_names``, ``is_available``), ``Runtime.operator_registry.operator_names``,
``Runtime.load_program(data, *, verification=..., enable_etdump=False, debug_buffer_size=0)`` taking a
path, bytes, bytearray or file object (here also memoryview and mmap), ``Program.method_names`` (a set),
``Program.load_method(name)`` (cached: the same Method each time), ``Program.metadata(name)`` ->
``MethodMeta`` (``name()``, ``num_inputs()``, ``num_outputs()``, ``num_attributes()``,
``input_tensor_meta(i)`` / ``output_tensor_meta(i)`` / ``attribute_tensor_meta(i)`` -> ``TensorInfo``
with ``sizes()``, ``dtype()`` (the ScalarType code, an int), ``nbytes()``, ``is_memory_planned()``;
IndexError past the end), ``Method.execute(inputs)`` and ``Method.metadata``, and ``Verification``
(``Minimal``, ``InternalConsistency``).

Differences: inputs and outputs are numpy arrays where ExecuTorch takes and returns torch tensors
(``execute`` also accepts anything ``np.asarray`` converts, such as a CPU torch tensor's ``.numpy()``);
errors are this package's ExecuTorchError subclasses (ExecuTorch raises RuntimeError; both are
Exception). This runtime always checks a program fully, so ``verification`` only selects nothing
weaker. ETDump: with ``enable_etdump=True`` each ``execute`` is profiled (one ETDump run per call:
operator, delegate and XNNPACK node events) and ``Program.write_etdump_result_to_file(etdump_path,
debug_buffer_path)`` writes them for ``executorch.devtools.Inspector``; with ``debug_buffer_size``
> 0 the calls also record every instruction's output and the method outputs (debug events) into
the debug buffer file, up to about that many bytes (later calls record timings only).
"""
from __future__ import annotations

import enum
import warnings
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Set, Union

from . import runtime as _rt
from ._native import lib, names

__all__ = ["Runtime", "Program", "Method", "MethodMeta", "TensorInfo", "Verification",
           "BackendRegistry", "OperatorRegistry"]

_SCALAR_NAMES = {0: "Byte", 1: "Char", 2: "Short", 3: "Int", 4: "Long", 5: "Half", 6: "Float", 7: "Double",
                 9: "ComplexFloat", 10: "ComplexDouble", 11: "Bool", 15: "BFloat16"}


class Verification(enum.IntEnum):
    """Program::Verification: how much a program is checked at load (this runtime always does
    the full checks, a superset of InternalConsistency)."""

    Minimal = 0
    InternalConsistency = 1


class TensorInfo:
    """A tensor input/output of a method: sizes, dtype code and size in bytes."""

    def __init__(self, meta: Any, planned: bool) -> None:
        self._meta = meta
        self._planned = planned

    def sizes(self) -> tuple:
        return tuple(self._meta.shape)

    def dtype(self) -> int:
        """The ExecuTorch ScalarType code (6 = Float, 4 = Long, ...)."""
        return self._code()

    def _code(self) -> int:
        return _CODES.get(self._meta.dtype, -1)

    def is_memory_planned(self) -> bool:
        return self._planned

    def nbytes(self) -> int:
        size = 1
        for d in self._meta.shape:
            size *= d
        return size * _itemsize(self._code())

    def __repr__(self) -> str:
        sizes = "[" + ", ".join(str(d) for d in self._meta.shape) + "]"
        return (f"TensorInfo(sizes={sizes}, dtype={_SCALAR_NAMES.get(self._code(), self._meta.dtype)}, "
                f"is_memory_planned={self._planned}, nbytes={self.nbytes()})")


_CODES = {n: c for c, n in _rt.dtypes._NAMES.items()}


def _itemsize(code: int) -> int:
    return 2 if code == 15 else _rt.dtypes._CODE_TO_NP[code].itemsize if code in _rt.dtypes._CODE_TO_NP else 0


class MethodMeta:
    """Metadata of a method: its user inputs and outputs."""

    def __init__(self, meta: "_rt.MethodMeta", planned_inputs: bool = True) -> None:
        self._meta = meta
        self._planned_inputs = planned_inputs

    def name(self) -> str:
        return self._meta.name

    def num_inputs(self) -> int:
        return len(self._meta.inputs)

    def num_outputs(self) -> int:
        return len(self._meta.outputs)

    def num_attributes(self) -> int:
        return 0

    def _tensor(self, side: Sequence[Any], index: int, what: str, planned: bool) -> TensorInfo:
        if not isinstance(index, int) or not 0 <= index < len(side):
            raise IndexError(f"Cannot get {what} tensor meta at {index}")
        v = side[index]
        if v.kind != "tensor":
            raise IndexError(f"Cannot get {what} tensor meta at {index}: it is a {v.kind}")
        return TensorInfo(v, planned)

    def input_tensor_meta(self, index: int) -> TensorInfo:
        return self._tensor(self._meta.inputs, index, "input", self._planned_inputs)

    def output_tensor_meta(self, index: int) -> TensorInfo:
        return self._tensor(self._meta.outputs, index, "output", True)

    def attribute_tensor_meta(self, index: int) -> TensorInfo:
        raise IndexError(f"Cannot get attribute tensor meta at {index}")

    def __repr__(self) -> str:
        ins = [repr(self.input_tensor_meta(i)) if v.kind == "tensor" else v.kind
               for i, v in enumerate(self._meta.inputs)]
        outs = [repr(self.output_tensor_meta(i)) if v.kind == "tensor" else v.kind.capitalize()
                for i, v in enumerate(self._meta.outputs)]
        return (f"MethodMeta(name='{self.name()}', num_inputs={self.num_inputs()}, input_tensor_meta={ins}, "
                f"num_outputs={self.num_outputs()}, output_tensor_meta={outs})")


class _ETDumpState:
    """The profiled calls of a program loaded with enable_etdump=True."""

    def __init__(self, debug_buffer_size: int) -> None:
        self.calls: List[Any] = []
        self.debug_buffer_size = debug_buffer_size
        self.debug_bytes = 0

    def run(self, method: "_rt.Method", inputs: Sequence[Any]) -> List[Any]:
        from . import etdump

        debug = self.debug_bytes < self.debug_buffer_size
        prof = method.profile(inputs, intermediate_outputs=True if debug else None)
        call = etdump.calls_of(prof)[-1]
        if not debug:
            call.outputs = None
        else:
            self.debug_bytes += sum(getattr(d.value, "nbytes", 8) + 64 for d in call.debug)
            self.debug_bytes += sum(getattr(o, "nbytes", 8) + 64 for o in call.outputs or ())
            if self.debug_bytes >= self.debug_buffer_size:
                warnings.warn(f"ETDump debug buffer of {self.debug_buffer_size} bytes is full: later calls "
                              "record timings only", RuntimeWarning, stacklevel=3)
        self.calls.append(call)
        return list(prof.outputs)


class Method:
    """A loaded method: ``execute(inputs)`` returns a list of numpy arrays."""

    def __init__(self, method: "_rt.Method", etdump: Optional[_ETDumpState] = None) -> None:
        self._method = method
        self._etdump = etdump

    def execute(self, inputs: Sequence[Any]) -> List[Any]:
        inputs = inputs if isinstance(inputs, (list, tuple)) else list(inputs)
        if self._etdump is not None:
            return self._etdump.run(self._method, inputs)
        return self._method(inputs)

    __call__ = execute

    @property
    def metadata(self) -> MethodMeta:
        return MethodMeta(self._method.metadata)

    @property
    def native(self) -> "_rt.Method":
        """This package's Method (names, outputs=, profile(), timeout...)."""
        return self._method


class Program:
    """A loaded program: its methods by name."""

    def __init__(self, program: "_rt.Program", etdump: Optional[_ETDumpState] = None) -> None:
        self._program = program
        self._etdump = etdump
        self._methods: Dict[str, Optional[Method]] = {n: None for n in program.method_names}

    @property
    def method_names(self) -> Set[str]:
        return set(self._methods)

    def load_method(self, name: str) -> Optional[Method]:
        if name not in self._methods:  # a KeyError too, as ExecuTorch's
            self._program._check_method(name, "loading method")
        method = self._methods[name]
        if method is None:
            method = Method(self._program.load_method(name), self._etdump)
            self._methods[name] = method
        return method

    def metadata(self, method_name: str) -> MethodMeta:
        return MethodMeta(self._program.signature(method_name))

    def write_etdump_result_to_file(self, etdump_path: str, debug_buffer_path: str) -> None:
        """Writes the ETDump of this program's calls so far (and, when it was loaded with a
        debug_buffer_size, the debug buffer)."""
        if self._etdump is None:
            raise RuntimeError("ETDump is not enabled: load the program with enable_etdump=True")
        from . import etdump

        etdump.write(self._etdump.calls, etdump_path,
                     debug_buffer_path if self._etdump.debug_buffer_size > 0 else None)

    @property
    def native(self) -> "_rt.Program":
        return self._program


class BackendRegistry:
    @property
    def registered_backend_names(self) -> List[str]:
        return names(lib.etnp_num_backends, lib.etnp_backend_name)

    def is_available(self, backend_name: str) -> bool:
        return backend_name in self.registered_backend_names


class OperatorRegistry:
    @property
    def operator_names(self) -> Set[str]:
        return set(names(lib.etnp_num_operators, lib.etnp_operator_name))


class Runtime:
    """The runtime singleton (``Runtime.get()``), over this package's shared Runtime."""

    _instance: Optional["Runtime"] = None

    @staticmethod
    def get() -> "Runtime":
        if Runtime._instance is None:
            Runtime._instance = Runtime(_rt.Runtime.get())
        return Runtime._instance

    def __init__(self, runtime: "_rt.Runtime") -> None:
        self.backend_registry = BackendRegistry()
        self.operator_registry = OperatorRegistry()
        self._runtime = runtime

    def load_program(self, data: Union[bytes, bytearray, BinaryIO, str, Any], *,
                     verification: Verification = Verification.InternalConsistency,
                     enable_etdump: bool = False, debug_buffer_size: int = 0) -> Program:
        if not isinstance(verification, (Verification, int)) or int(verification) not in (0, 1):
            raise TypeError(f"verification must be a Verification, not {verification!r}")
        if not isinstance(debug_buffer_size, int) or isinstance(debug_buffer_size, bool) or debug_buffer_size < 0:
            raise TypeError(f"debug_buffer_size must be a non-negative int, not {debug_buffer_size!r}")
        state = _ETDumpState(debug_buffer_size) if enable_etdump else None
        return Program(self._runtime.load_program(data), state)

    @property
    def native(self) -> "_rt.Runtime":
        return self._runtime

