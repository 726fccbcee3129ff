"""The small zoo's KV-cache decoders: llama-architecture models whose cache is a buffer mutated in
forward, called once per token on one loaded method (kv_*)."""
from __future__ import annotations

import torch
import torch.nn as nn
from torch.export import Dim

from .registry import zoo
from .small_transformers import hf


class HFStatic(nn.Module):
    """transformers' StaticCache export wrapper: the cache is a registered buffer updated in forward."""

    def __init__(self):
        super().__init__()
        from transformers.integrations.executorch import TorchExportableModuleWithStaticCache
        m = hf("LlamaForCausalLM", "LlamaConfig", hidden_size=128, intermediate_size=256, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, vocab_size=1000, max_position_embeddings=64)
        m.generation_config.cache_implementation = "static"
        m.generation_config.cache_config = {"batch_size": 1, "max_cache_len": 32}
        self.m = TorchExportableModuleWithStaticCache(m, batch_size=1, max_cache_len=32)

    def forward(self, input_ids, cache_position):
        return self.m(input_ids=input_ids, cache_position=cache_position)


class ETLlama(nn.Module):
    """ExecuTorch's examples/models/llama Transformer, tiny ModelArgs, KV cache, no custom sdpa ops."""

    def __init__(self, dynamic=False):
        super().__init__()
        from executorch.examples.models.llama.llama_transformer import construct_transformer
        from executorch.examples.models.llama.model_args import ModelArgs
        args = ModelArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=256, hidden_dim=128,
                         max_seq_len=32, max_context_len=32, use_kv_cache=True, use_sdpa_with_kv_cache_op=False,
                         enable_dynamic_shape=dynamic, generate_full_logits=False)
        self.m = construct_transformer(args)
        for mod in self.m.modules():  # RMSNorm weights start at one: make them vary
            if type(mod).__name__ == "RMSNorm":
                nn.init.uniform_(mod.weight, 0.5, 1.5)

    def forward(self, tokens, input_pos):
        return self.m(tokens, {"input_pos": input_pos})


def decode_calls(n, first=0, vocab=256):
    return [(torch.randint(0, vocab, (1, 1)), torch.tensor([first + k], dtype=torch.long)) for k in range(n)]


zoo("kv_hf_llama_static", "kv-cache-xnn", stateful=True, strict=True)(
    lambda: dict(model=HFStatic(), calls=decode_calls(4, vocab=1000)))
zoo("kv_et_llama", "kv-cache-xnn", stateful=True)(lambda: dict(model=ETLlama(), calls=decode_calls(4)))
zoo("kv_et_llama_portable", "kv-cache-portable", stateful=True)(lambda: dict(model=ETLlama(), calls=decode_calls(4)))
zoo("ao8da4w_kv_et_llama", "8da4w-xnn", stateful=True)(lambda: dict(model=ETLlama(), calls=decode_calls(4)))


@zoo("kv_et_llama_dyn", "kv-cache-xnn", stateful=True)
def _():
    prefill = (torch.randint(0, 256, (1, 5)), torch.tensor([0]))
    return dict(model=ETLlama(dynamic=True), calls=[prefill] + decode_calls(3, first=5),
                dyn=({1: Dim("seq", min=1, max=16)}, None))
