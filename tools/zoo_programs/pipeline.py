"""The export pipeline of one zoo program: seeded build, quantisation (PT2E int8, torchao 8da4w /
8da8w), torch-eager reference calls, export, lowering (XNNPACK or portable), the .pte / .ptd /
.npz files. Also tools/atlas_export.py's."""
from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
import zlib

import numpy as np
import torch
import torch.nn as nn
from torch.export import export


SEED = 20240


def pt2e(model, inputs, dynamic, dyn, weight_bits=8):
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    # (4-bit: per-channel int4 weights in [-8, 7], which XNNPACK's lowering serializes as qcint4)
    wq = dict(weight_qmin=-8, weight_qmax=7) if weight_bits == 4 else {}
    cfg = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic, **wq)
    # dynamic: linears only (set_global would also annotate the index inputs of embeddings)
    q = XNNPACKQuantizer().set_module_type(nn.Linear, cfg) if dynamic else XNNPACKQuantizer().set_global(cfg)
    m = prepare_pt2e(export(model, inputs, dynamic_shapes=dyn, strict=False).module(), q)
    m(*inputs)
    return convert_pt2e(m)


def torchao(model, bits):
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
    from torchao.quantization.granularity import PerAxis, PerGroup
    gran = PerGroup(32) if bits == 4 else PerAxis(0)
    quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=getattr(torch, f"int{bits}"),
                                                           weight_granularity=gran),
              filter_fn=lambda m, _: isinstance(m, nn.Linear) and m.weight.shape[1] % 32 == 0)
    return model


def out_steps(gm, n):
    """Each output's quantisation step when it is produced by a dequantize_per_tensor, else None."""
    try:
        out = next(nd for nd in gm.graph.nodes if nd.op == "output").args[0]
        out = out if isinstance(out, (tuple, list)) else (out,)
        steps = []
        for nd in out:
            tgt = str(getattr(nd, "target", ""))
            steps.append(float(nd.args[1]) if "dequantize_per_tensor" in tgt and isinstance(nd.args[1], float) else None)
        return steps if len(steps) == n else [None] * n
    except Exception:
        return [None] * n


def flat(out):
    if isinstance(out, torch.Tensor):
        return (out,)
    res = []
    for o in (out if isinstance(out, (tuple, list)) else [out]):
        res.extend(flat(o) if not isinstance(o, torch.Tensor) else [o])
    return tuple(res)


def prepare(model):
    model = model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    for mod in model.modules():  # non-trivial batchnorm statistics
        if isinstance(mod, nn.modules.batchnorm._BatchNorm) and mod.running_mean is not None:
            mod.running_mean.uniform_(-0.1, 0.1)
            mod.running_var.uniform_(0.5, 1.5)
    return model


def export_one(name, entry, outdir):
    torch.manual_seed(SEED + zlib.crc32(entry.get("seed_as", name).encode()) % 10000)  # seed_as: a twin's weights
    if "export" in entry:  # its own export flow (export_llama)
        return entry["export"](name, entry, outdir)
    recipe, stateful = entry["recipe"], entry.get("stateful", False)
    spec = entry["build"]()
    model, calls, dyn = prepare(spec["model"]), spec["calls"], spec.get("dyn")
    if recipe.startswith("channels-last"):  # the inputs only: XNNPACK's ChannelsLastTaggedReshapePass
        calls = [tuple(t.to(memory_format=torch.channels_last) if t.dim() == 4 else t for t in c) for c in calls]
        # asserts NCHW constant weights, so the model itself stays contiguous
    with torch.no_grad():
        if recipe.startswith("int8-"):
            model = pt2e(model, calls[0], recipe.startswith("int8-dyn"), dyn, 4 if "qc4w" in recipe else 8)
        elif "8da4w" in recipe or "8da8w" in recipe:
            model = torchao(model, 4 if "8da4w" in recipe else 8)
        eager = copy.deepcopy(model) if stateful else model
        outs = [flat(eager(*c)) for c in calls]
    for k, o in enumerate(outs):
        if not all(torch.isfinite(t).all() for t in o if t.is_floating_point()):
            raise ValueError(f"eager outputs of call {k} are not finite")
    xnn, ext = "xnn" in recipe, recipe.startswith("ext-")
    strict = entry.get("strict", False) or (ext and xnn)
    ep = export(model, calls[0], dynamic_shapes=dyn, strict=strict)
    if ext and xnn:  # tag delegate constants for the .ptd too (what export_llama does)
        from executorch.exir.passes.external_constants_pass import delegate_external_constants_pass_unlifted
        gm = ep.module()
        delegate_external_constants_pass_unlifted(module=gm, gen_tag_fn=lambda _: name)
        ep = export(gm, calls[0], dynamic_shapes=dyn, strict=True)
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    part = []
    if xnn:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        part = [XnnpackPartitioner()]
    edge = to_edge_transform_and_lower(ep, partitioner=part)
    et = edge.to_executorch(ExecutorchBackendConfig(external_constants=True) if ext else None)
    data_files = []
    if ext:
        tmp = tempfile.mkdtemp()
        et.write_tensor_data_to_file(tmp)
        for i, f in enumerate(sorted(os.listdir(tmp))):
            dst = f"{name}.ptd" if i == 0 else f"{name}.{i}.ptd"
            shutil.move(os.path.join(tmp, f), os.path.join(outdir, dst))
            data_files.append(dst)
        os.rmdir(tmp)
    with open(os.path.join(outdir, name + ".pte"), "wb") as fh:
        fh.write(et.buffer)
    meta = dict(recipe=recipe, calls=len(calls), stateful=stateful, data_files=data_files,
                in_dim_orders=[list(t.dim_order()) if isinstance(t, torch.Tensor) else None for t in calls[0]],
                out_steps=out_steps(model, len(outs[0])) if recipe.startswith("int8-static") else [None] * len(outs[0]))
    save_npz(outdir, name, calls, outs, meta)
    return len(et.buffer)


def save_npz(outdir, name, calls, outs, meta):
    ref = {}
    for k, (c, o) in enumerate(zip(calls, outs)):
        for i, t in enumerate(c):
            ref[f"forward:call{k}:in:{i}"] = t.contiguous().numpy()
        for i, t in enumerate(o):
            ref[f"forward:call{k}:out:{i}"] = t.contiguous().numpy()
    for key in list(ref):
        if key.startswith("forward:call0:"):
            ref["forward:" + key[len("forward:call0:"):]] = ref[key]
    np.savez(os.path.join(outdir, name + ".npz"), meta=np.array(json.dumps(meta)), **ref)
