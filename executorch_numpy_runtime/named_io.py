"""Names of a method's inputs and outputs, and feeds given by name.

ExecuTorch 1.3.1 does not store the exported module's parameter names for positional inputs.
What a .pte does keep is each method's *container metadata* (``ExecutionPlan.container_meta_type``):
the pytree specs, as JSON, of the ``(args, kwargs)`` the program was exported with and of its
outputs. Keyword inputs (``export(m, (x,), {"scale": s})``) and dict outputs (``return {"logits":
y}``) therefore have names there; every other input is ``input_<i>`` and output ``output_<i>``
(``i`` its flat position). A value nested in a dict is named by the keys on its path joined with
``.`` (``"batch.image"``).
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .errors import ExecutionError

_DICT_TYPES = ("builtins.dict", "collections.OrderedDict")


def _leaf_paths(spec: Any, path: Tuple[Any, ...], out: List[Tuple[Any, ...]]) -> None:
    """Appends the path of each leaf of a pytree spec (dict keys as str, sequence positions as int)."""
    if not isinstance(spec, dict):
        raise ValueError("bad pytree spec")
    children = spec.get("children_spec") or []
    kind = spec.get("type")
    if kind is None and not children:
        out.append(path)
        return
    keys: Optional[List[Any]] = None
    if kind in _DICT_TYPES:
        ctx = spec.get("context")
        keys = json.loads(ctx) if isinstance(ctx, str) else ctx
        if not isinstance(keys, list) or len(keys) != len(children):
            raise ValueError("bad dict context")
    for k, child in enumerate(children):
        _leaf_paths(child, path + ((str(keys[k]),) if keys is not None else (k,)), out)


def _names(paths: List[Tuple[Any, ...]], prefix: str) -> List[str]:
    names = []
    for i, p in enumerate(paths):
        keys = [c for c in p if isinstance(c, str)]
        names.append(".".join(keys) if keys else f"{prefix}_{i}")
    if len(set(names)) != len(names):  # ambiguous (keys repeated at different depths): positional names
        return [f"{prefix}_{i}" for i in range(len(paths))]
    return names


def io_names(encoded_inputs: str, encoded_outputs: str, num_inputs: int, num_outputs: int) -> Tuple[
        Tuple[str, ...], Tuple[str, ...]]:
    """(input names, output names) from a method's container metadata (JSON pytree specs; "" when
    absent). Falls back to positional names when the specs are absent, unreadable or do not
    describe as many values as the method has."""
    ins = [f"input_{i}" for i in range(num_inputs)]
    outs = [f"output_{i}" for i in range(num_outputs)]
    for encoded, n, fallback, prefix, is_input in ((encoded_inputs, num_inputs, ins, "input", True),
                                                     (encoded_outputs, num_outputs, outs, "output", False)):
        if not encoded:
            continue
        try:
            decoded = json.loads(encoded)
            spec = decoded[1] if isinstance(decoded, list) and len(decoded) == 2 else decoded
            paths: List[Tuple[Any, ...]] = []
            _leaf_paths(spec, (), paths)
            if is_input and paths and all(len(p) >= 1 for p in paths):
                # (args, kwargs): drop the top level (0: positional, 1: keyword)
                paths = [p[1:] for p in paths]
        except (ValueError, TypeError, KeyError, IndexError):
            continue
        if len(paths) == n:
            fallback[:] = _names(paths, prefix)
    return tuple(ins), tuple(outs)


def order_feeds(names: Sequence[str], method: str, feeds: Any, keywords: Mapping[str, Any]) -> List[Any]:
    """The inputs, in the method's order, from a mapping of input name -> value (``feeds``: a dict,
    or an empty sequence) and keyword arguments. ``input_<i>`` names every input by position,
    whatever its own name."""
    if not isinstance(feeds, Mapping):
        if len(feeds):
            raise TypeError("give inputs either as a sequence or by name (a dict or keywords), not both")
        feeds = {}
    values: List[Any] = [None] * len(names)
    given = [False] * len(names)
    index: Dict[str, int] = {n: i for i, n in enumerate(names)}
    for key, value in list(feeds.items()) + list(keywords.items()):
        if not isinstance(key, str):
            raise TypeError(f"input names must be str, not {type(key).__name__}")
        i = index.get(key)
        if i is None and key.startswith("input_") and key[6:].isdigit() and int(key[6:]) < len(names):
            i = int(key[6:])
        if i is None:
            raise ExecutionError(f"method {method!r} has no input named {key!r} (its inputs: {', '.join(names)})")
        if given[i]:
            raise ExecutionError(f"input {names[i]!r} of method {method!r} given twice")
        values[i], given[i] = value, True
    missing = [names[i] for i in range(len(names)) if not given[i]]
    if missing:
        raise ExecutionError(f"method {method!r}: missing input(s) {', '.join(map(repr, missing))}")
    return values
