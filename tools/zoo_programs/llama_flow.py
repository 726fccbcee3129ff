"""ExecuTorch's own LLM exporter (examples/models/llama export_llama_lib, the code path of
`python -m executorch.examples.models.llama.export_llama`) from a seeded random checkpoint: the
full_llama_* programs' export, and the checkpoint tools/export_llm_fixtures.py shares."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

import torch

from .pipeline import flat, save_npz


LLM_METADATA = {"get_bos_id": 1, "get_eos_ids": [2]}


def llama_checkpoint(folder, params, max_seq):
    """A seeded random state dict for export_llama's -c (without one, RMSNorm weights, rope tables
    and the mask stay uninitialised and eager logits are NaN) and its params.json."""
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs
    model = construct_transformer(ModelArgs(**params, max_seq_len=max_seq, max_context_len=max_seq))
    sd = {}
    for k, v in model.state_dict().items():
        if "cache" in k or "freqs" in k or "mask" in k:
            continue
        if v.dim() == 1:  # norm weights around one
            sd[k] = 1.0 + 0.2 * torch.randn_like(v)
        elif k.startswith("tok_embeddings"):
            sd[k] = torch.randn_like(v)
        else:
            sd[k] = torch.randn_like(v) * ((3.0 if k.startswith("output") else 1.0) / v.shape[1] ** 0.5)
    del model
    ckpt, pfile = os.path.join(folder, "ckpt.pth"), os.path.join(folder, "params.json")
    torch.save(sd, ckpt)
    with open(pfile, "w") as f:
        json.dump(params, f)
    return ckpt, pfile


def load_llama_custom_ops():
    """Registers llama::* with torch: _portable_lib and the AOT library, both with RTLD_LAZY (the
    wheel's native libraries reference a symbol absent from torch 2.13.0+cpu)."""
    import ctypes
    import executorch
    flags = sys.getdlopenflags()
    sys.setdlopenflags(os.RTLD_LAZY)
    try:
        from executorch.extension.pybindings import _portable_lib  # noqa: F401
    finally:
        sys.setdlopenflags(flags)
    ctypes.CDLL(os.path.join(list(executorch.__path__)[0], "extension/llm/custom_ops/libcustom_ops_aot_lib.so"),
                mode=os.RTLD_LAZY)
    assert torch.ops.llama.custom_sdpa.default is not None


def export_llama_flow(name, entry, outdir):
    """export_llama with entry["flags"]; the eager reference comes from the model export_llama's own
    source transforms build from the same checkpoint and flags less the custom-op ones
    (--use_sdpa_with_kv_cache: llama::sdpa_with_kv_cache / custom_sdpa / update_cache abort in eager
    here; they compute the same attention)."""
    from executorch.examples.models.llama import export_llama_lib as lib
    from executorch.extension.llm.export.config.llm_config import LlmConfig
    spec = entry["build"]()
    flags, calls, max_seq = entry["flags"], spec["calls"], entry["max_seq"]
    custom = "--use_sdpa_with_kv_cache" in flags
    if custom:
        load_llama_custom_ops()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt, pfile = llama_checkpoint(tmp, entry["params"], max_seq)

        def argv(fl):
            return ["-c", ckpt, "-p", pfile, "--max_seq_length", str(max_seq), "--max_context_length", str(max_seq),
                    "--metadata", json.dumps(LLM_METADATA), "--output-dir", tmp, "-n", name] + fl

        twin = [f for f in flags if f != "--use_sdpa_with_kv_cache"]
        manager = lib._prepare_for_llama_export(LlmConfig.from_args(lib.build_args_parser().parse_args(argv(twin))))
        eager = manager.model.eval()
        with torch.no_grad():
            outs = [flat(eager(c[0], {"input_pos": c[1]})) for c in calls]
        del manager, eager
        for k, o in enumerate(outs):
            if not all(torch.isfinite(t).all() for t in o if t.is_floating_point()):
                raise ValueError(f"eager outputs of call {k} are not finite")
        path = lib.export_llama(lib.build_args_parser().parse_args(argv(flags)))
        shutil.move(path, os.path.join(outdir, name + ".pte"))
    size = os.path.getsize(os.path.join(outdir, name + ".pte"))
    note = ("eager reference: the model export_llama's source transforms build from the same checkpoint and flags "
            "without --use_sdpa_with_kv_cache (the llama custom ops abort in eager here)") if custom else "eager reference"
    meta = dict(recipe=entry["recipe"], calls=len(calls), stateful=True, data_files=[],
                in_dim_orders=[list(range(t.dim())) for t in calls[0]], out_steps=[None] * len(outs[0]),
                export_llama_flags=flags, params=entry["params"], max_seq_len=max_seq, reference=note)
    save_npz(outdir, name, calls, outs, meta)
    return size


def llama_calls(prefill=64, decode=3, vocab=49152):
    """A prefill of `prefill` tokens at position 0, then `decode` single-token steps (one loaded method)."""
    calls = [(torch.randint(0, vocab, (1, prefill)), torch.tensor([0], dtype=torch.long))]
    return calls + [(torch.randint(0, vocab, (1, 1)), torch.tensor([prefill + k], dtype=torch.long))
                    for k in range(decode)]
