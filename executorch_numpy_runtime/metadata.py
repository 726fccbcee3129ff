"""Metadata of methods: ValueMeta (one input/output), StateMeta, MethodMeta."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

from . import dtypes

_KIND_TENSOR = 4
_KIND_NAMES = {0: "none", 1: "int", 2: "bool", 3: "float", 4: "tensor", 5: "string", 6: "int_list",
               7: "float_list", 8: "bool_list", 9: "tensor_list", 10: "optional_tensor_list"}


@dataclass(frozen=True)
class ValueMeta:
    """One method input or output.

    For tensors ``shape`` is the planned shape; when ``dynamic`` is true the program accepts
    any size up to ``shape`` in each dimension (``dynamic_dims`` marks them as ``None``).
    """

    kind: str
    dtype: Optional[str] = None
    shape: Optional[Tuple[int, ...]] = None
    dynamic: bool = False
    # the program's memory order of the dims when it is not the default, e.g. (0, 2, 3, 1) for
    # channels-last; arrays still cross the API with their logical values (NCHW-shaped)
    dim_order: Optional[Tuple[int, ...]] = None

    @property
    def dynamic_dims(self) -> Optional[Tuple[Optional[int], ...]]:
        if self.shape is None:
            return None
        return tuple(None for _ in self.shape) if self.dynamic else self.shape

    def __str__(self) -> str:
        if self.kind != "tensor":
            return self.kind
        dims = ", ".join(("<=%d" % d) if self.dynamic else str(d) for d in self.shape)
        return f"{self.dtype}[{dims}]"


@dataclass(frozen=True)
class StateMeta:
    """A tensor the method keeps across calls (a registered buffer its program updates, such as
    a KV cache): its name in the exported module when the program records one."""

    name: str
    dtype: str
    shape: Tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class MethodMeta:
    name: str
    inputs: Tuple[ValueMeta, ...]
    outputs: Tuple[ValueMeta, ...]
    # known once the method is loaded (Program.signature leaves it empty)
    state: Tuple[StateMeta, ...] = field(default=(), compare=False)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.inputs))}) -> ({', '.join(map(str, self.outputs))})"


def _meta(m) -> ValueMeta:
    kind = _KIND_NAMES.get(m.kind, str(m.kind))
    if m.kind != _KIND_TENSOR:
        return ValueMeta(kind)
    order = tuple(int(m.dim_order[i]) for i in range(m.ndim))
    return ValueMeta(kind, dtypes.dtype_name(m.dtype), tuple(int(m.sizes[i]) for i in range(m.ndim)), m.dynamic != 0,
                     None if order == tuple(range(m.ndim)) else order)
