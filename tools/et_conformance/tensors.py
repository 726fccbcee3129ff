"""torch <-> worker conversions for the pytest side: inputs to (specs, arrays), replies to tensors.

Dim orders come from the program (execution plan of the method) when known, else from the
input tensor's strides. bf16 travels as uint16 bit patterns. Outputs come back as upstream
pybindings give them: a list of tensors (logical values; non-default dim orders keep their
strides) and Python scalars.
"""

import numpy as np
import torch

BFLOAT16 = 15  # executorch ScalarType.BFLOAT16


def plan_io(program, method="forward"):
    """{"inputs": [...], "outputs": [...]} of (scalar_type, dim_order) or None per value."""
    for plan in program.execution_plan:
        if plan.name != method:
            continue

        def desc(idx):
            val = plan.values[idx].val
            if hasattr(val, "dim_order") and hasattr(val, "scalar_type"):
                return (int(val.scalar_type), [int(d) for d in val.dim_order])
            return None

        return {"inputs": [desc(i) for i in plan.inputs], "outputs": [desc(i) for i in plan.outputs]}
    return None


def _default(order):
    return list(order) == list(range(len(order)))


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def encode_inputs(flat_inputs, io=None):
    """(specs, arrays) for the worker from the flattened inputs of run_artifact."""
    metas = (io or {}).get("inputs") or []
    specs, arrays = [], []
    for i, x in enumerate(flat_inputs):
        meta = metas[i] if i < len(metas) else None
        if isinstance(x, torch.Tensor):
            t = x.detach()
            if meta is not None and len(meta[1]) == t.dim():
                order = list(meta[1])
            else:
                try:
                    order = [int(d) for d in t.dim_order()]
                except Exception:  # non-dense strides: send it in default order
                    order = list(range(t.dim()))
            phys = t.permute(order).contiguous() if t.dim() else t.contiguous()
            bf16 = t.dtype == torch.bfloat16
            arr = phys.view(torch.int16).numpy().view(np.uint16) if bf16 else phys.numpy()
            specs.append({"kind": "tensor", "shape": list(t.shape), "dim_order": order, "bf16": bf16})
            arrays.append(arr)
        elif x is None:
            specs.append({"kind": "none"})
        elif isinstance(x, (bool, int, float)):
            specs.append({"kind": "scalar", "value": x})
        else:
            raise TypeError(f"input {i}: cannot send {type(x).__name__} to the runtime worker")
    return specs, arrays


def decode_outputs(specs, arrays, io=None, cl_output="bytes"):
    """Tensors/scalars (a list, like pybindings' run_method) from the worker's reply.

    cl_output says how the runtime returns an output whose program dim order is not the
    default: "bytes" (logical shape, bytes in dim order - upstream ExecuTorch) or "logical"."""
    metas = (io or {}).get("outputs") or []
    outs, k = [], 0
    for i, spec in enumerate(specs):
        meta = metas[i] if i < len(metas) else None
        if spec["kind"] == "scalar":
            outs.append(spec["value"])
            continue
        if spec["kind"] == "none":
            outs.append(None)
            continue
        arr = arrays[k]
        k += 1
        as_bf16 = spec.get("bf16") or (
            arr.dtype == np.uint16 and (meta is None or meta[0] == BFLOAT16)
        )
        if as_bf16:
            t = torch.from_numpy(np.ascontiguousarray(arr).view(np.int16).copy()).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.ascontiguousarray(arr).copy())
        if meta is not None and cl_output == "bytes" and not _default(meta[1]) and len(meta[1]) == t.dim():
            order = meta[1]
            t = t.reshape([t.shape[d] for d in order]).permute(_inverse(order))
        outs.append(t)
    return outs
