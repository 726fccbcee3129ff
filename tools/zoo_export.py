#!/usr/bin/env python3
"""Export the real-model zoo: real architectures with seeded random weights, as users export them.

Runs ONLY in the export environment (torch 2.13.0 + executorch 1.3.1 + torchvision + timm +
transformers + torchao; see shared/spec/oracle-env.md). No network: every model is built from its
class or a small ``*Config`` with seeded random weights.

    FLATC_EXECUTABLE=.../flatc python tools/zoo_export.py [--out /work/zoo] [--only NAME ...] [--full] [--list]

The default is the small zoo. ``--full`` exports the full-size programs instead (``full_*``: real default
configs - torchvision resnet50 / vit_b_16, BERT-base, a SmolLM-135M-class llama through export_llama, ... -
seeded random weights, realistic inputs such as 224x224 images or 128 tokens; default --out
/work/fullzoo), in priority order; ``--only`` names programs of either set.

For every program NAME it writes, into the output directory (never the repository):
  NAME.pte         the ExecuTorch program
  NAME*.ptd        the external data files of ``ext_*`` programs (named in the meta record)
  NAME.npz         ``forward:in:i`` / ``forward:out:i``: seeded inputs and torch-eager outputs of the
                   first call (the layout of tools/export_fixtures.py); programs called more than once
                   (KV-cache decoders: successive calls on one loaded method; dynamic shapes: one call
                   per shape) also hold ``forward:call{k}:in:i`` / ``forward:call{k}:out:i`` for every
                   call k; ``meta`` is a JSON string: recipe, number of calls, stateful, data_files,
                   in_dim_orders (each input's torch dim order; inputs are stored in logical layout) and
                   ``out_steps`` (the quantisation step of each output when it leaves a quantised op,
                   else null).
The eager reference is the model the program was exported from: for PT2E recipes the converted
(quantise/dequantise) module, for torchao recipes the quantize_-d module, so a program is checked
against what it should compute, not against the float model.

Recipes (the name prefix says which):
  fp32-xnn         fp32, XnnpackPartitioner            (tv_*, timm_*, hf_*)
  fp32-portable    fp32, no partitioner                (*_portable)
  int8-static-xnn  PT2E XNNPACKQuantizer, per-channel static int8, calibrated on the input (q8s_*)
  int8-dyn-xnn     PT2E XNNPACKQuantizer, per-channel weights, dynamic int8 activations  (q8d_*)
  8da4w-xnn / 8da8w-xnn   torchao quantize_(Int8DynamicActivationIntxWeightConfig) with int4
                   weights in groups of 32 / int8 per-channel weights (ao_*)
  kv-cache-*       llama-architecture decoders with a KV-cache buffer mutated in forward (kv_*)
  dynamic-xnn      a dynamic batch or sequence dimension, one reference per shape (dyn_*)
  channels-last-xnn  inputs in torch.channels_last, so the program's inputs have dim order NHWC (cl_*;
                   weights stay contiguous: XNNPACK's lowering asserts NCHW constant weights)
  llama-flow-*     ExecuTorch's own LLM exporter (examples/models/llama export_llama_lib) from a seeded
                   random checkpoint (full_llama_*); its eager reference is the model the flow's source
                   transforms build without the llama custom ops (see export_llama_flow; meta "reference")
  ext-*            ExecutorchBackendConfig(external_constants=True): weights in a .ptd (ext_*); for
                   XNNPACK the delegate's constants are tagged too (delegate_external_constants_pass_
                   unlifted, as export_llama does), which only moves quantised (torchao) weights
Each program is exported in its own try/except; failures are listed at the end (exit status 1).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import zlib

import numpy as np
import torch
import torch.nn as nn
from torch.export import Dim, export

SEED = 20240
ZOO = {}


def zoo(name, recipe, **opts):
    """Register a builder: () -> dict(model=..., calls=[inputs, ...], dyn=dynamic_shapes)."""
    def deco(fn):
        ZOO[name] = dict(recipe=recipe, build=fn, **opts)
        return fn
    return deco


def img(c=3, h=128, w=None, n=1):
    return torch.rand(n, c, h, w or h) * 2 - 1


def ids(n, s, vocab=1000):
    return torch.randint(0, vocab, (n, s))


class Pick(nn.Module):
    """Wrap a model whose output is a ModelOutput / dict: return the named tensor fields."""

    def __init__(self, m, *fields, **kw):
        super().__init__()
        self.m, self.fields, self.kw = m, fields, kw

    def forward(self, *args):
        out = self.m(*args, **self.kw)
        if not self.fields:
            return out
        res = tuple(out[f] for f in self.fields)
        return res if len(res) > 1 else res[0]


# ----------------------------------------------------------------- torchvision
def tv(fn, **kw):
    import torchvision.models as tvm
    return getattr(tvm, fn)(weights=None, **kw)


def tv_vit_mini():
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=96, patch_size=16, num_layers=4, num_heads=4, hidden_dim=128,
                          mlp_dim=512, num_classes=100)
    nn.init.normal_(m.heads.head.weight, std=0.05)  # torchvision starts the head at zero
    nn.init.normal_(m.heads.head.bias, std=0.05)
    return m


def tv_convnext_mini():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    cfg = [CNBlockConfig(48, 96, 1), CNBlockConfig(96, 192, 1), CNBlockConfig(192, 384, 3), CNBlockConfig(384, None, 1)]
    return ConvNeXt(cfg, stochastic_depth_prob=0.0, num_classes=100)


def tv_swin_mini():
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=48, depths=[2, 2, 2, 2], num_heads=[2, 4, 8, 16],
                           window_size=[7, 7], num_classes=100)


def tv_regnet():
    """regnet_y_400mf with its blocks renamed "blockS_i": ExecuTorch 1.3.1's XNNPACK FuseBatchNormPass
    fails on torchvision's "blockS-i" names ("..._weight_fused_bn is not in list")."""
    from collections import OrderedDict
    m = tv("regnet_y_400mf", num_classes=100)
    for stage in m.trunk_output:
        stage._modules = OrderedDict((k.replace("-", "_"), v) for k, v in stage._modules.items())
    return m


TV_CNN = {  # name: (constructor, kwargs, input resolution)
    "resnet18": (lambda: tv("resnet18", num_classes=100), 128),
    "mobilenet_v2": (lambda: tv("mobilenet_v2", num_classes=100), 128),
    "mobilenet_v3_small": (lambda: tv("mobilenet_v3_small", num_classes=100), 128),
    "mobilenet_v3_large": (lambda: tv("mobilenet_v3_large", num_classes=100), 128),
    "efficientnet_b0": (lambda: tv("efficientnet_b0", num_classes=100), 128),
    "shufflenet_v2": (lambda: tv("shufflenet_v2_x1_0", num_classes=100), 128),
    "squeezenet": (lambda: tv("squeezenet1_1", num_classes=100), 128),
    "densenet121": (lambda: tv("densenet121", num_classes=100), 96),
    "regnet_y_400mf": (tv_regnet, 128),
    "mnasnet0_5": (lambda: tv("mnasnet0_5", num_classes=100), 128),
    "googlenet": (lambda: tv("googlenet", num_classes=100, aux_logits=False, init_weights=True), 128),
    "convnext_mini": (tv_convnext_mini, 128),
    "swin_mini": (tv_swin_mini, 112),
    "vit_mini": (tv_vit_mini, 96),
}


def tv_entry(key):
    make, res = TV_CNN[key]
    return lambda: dict(model=make(), calls=[(img(h=res),)])


for _k in TV_CNN:
    zoo(f"tv_{_k}", "fp32-xnn")(tv_entry(_k))
for _k in ("resnet18", "mobilenet_v2", "vit_mini"):
    zoo(f"tv_{_k}_portable", "fp32-portable")(tv_entry(_k))
for _k in ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "shufflenet_v2", "squeezenet",
           "regnet_y_400mf", "googlenet"):
    zoo(f"q8s_{_k}", "int8-static-xnn")(tv_entry(_k))


@zoo("dyn_resnet18_batch", "dynamic-xnn")
def _():
    return dict(model=tv("resnet18", num_classes=100), calls=[(img(h=96, n=2),), (img(h=96, n=3),)],
                dyn=({0: Dim("batch", min=1, max=4)},))


@zoo("dyn_mobilenet_v2_batch", "dynamic-xnn")
def _():
    return dict(model=tv("mobilenet_v2", num_classes=100), calls=[(img(h=96, n=3),), (img(h=96, n=1),)],
                dyn=({0: Dim("batch", min=1, max=4)},))


for _k in ("resnet18", "mobilenet_v2"):
    zoo(f"cl_{_k}", "channels-last-xnn")(tv_entry(_k))
zoo("ext_resnet18_xnn", "ext-xnn")(tv_entry("resnet18"))
zoo("ext_mobilenet_v2_portable", "ext-portable")(tv_entry("mobilenet_v2"))


# ----------------------------------------------------------------------- timm
def timm_model(name, **kw):
    import timm
    return timm.create_model(name, pretrained=False, num_classes=100, **kw)


TIMM = {  # name: (timm name, kwargs, resolution)
    "deit_tiny": ("deit_tiny_patch16_224", dict(img_size=96), 96),
    "levit_128s": ("levit_128s", dict(img_size=128), 128),
    "ghostnet_050": ("ghostnet_050", {}, 128),
    "fastvit_t8": ("fastvit_t8", {}, 128),
    "mobilevit_xxs": ("mobilevit_xxs", {}, 128),
    "efficientformer_l1": ("efficientformer_l1", {}, 224),
    "dinov2_small": ("vit_small_patch14_dinov2", dict(img_size=98, depth=4), 98),
    "efficientvit_b0": ("efficientvit_b0", {}, 128),
}


def timm_entry(key):
    name, kw, res = TIMM[key]
    return lambda: dict(model=timm_model(name, **kw), calls=[(img(h=res),)])


for _k in TIMM:
    zoo(f"timm_{_k}", "fp32-xnn")(timm_entry(_k))
zoo("timm_deit_tiny_portable", "fp32-portable")(timm_entry("deit_tiny"))
zoo("q8d_deit_tiny", "int8-dyn-xnn")(timm_entry("deit_tiny"))


# ---------------------------------------------------------------- transformers
def hf(cls_name, cfg_name, **cfg):
    import transformers
    config = getattr(transformers, cfg_name)(**cfg)
    return getattr(transformers, cls_name)(config).eval()


def bert_tiny():
    return hf("BertModel", "BertConfig", hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
              intermediate_size=512, vocab_size=1000, max_position_embeddings=128)


def with_mask(n, mask):
    """Token ids [1, n] and, when `mask`, an all-ones attention mask (PT2E's prepare_pt2e breaks the
    integer index arithmetic of transformers' mask construction, so int8-dyn programs take ids only)."""
    return (ids(1, n), torch.ones(1, n, dtype=torch.long)) if mask else (ids(1, n),)


def hf_bert(mask=True):
    return dict(model=Pick(bert_tiny(), "last_hidden_state", "pooler_output"), calls=[with_mask(32, mask)])


def hf_gpt2():
    m = hf("GPT2LMHeadModel", "GPT2Config", n_embd=128, n_layer=2, n_head=2, vocab_size=1000, n_positions=128)
    return dict(model=Pick(m, "logits", use_cache=False), calls=[(ids(1, 24),)])


def hf_t5():
    m = hf("T5EncoderModel", "T5Config", d_model=128, d_ff=256, num_layers=2, num_heads=4, d_kv=32, vocab_size=1000)
    return dict(model=Pick(m, "last_hidden_state"), calls=[(ids(1, 24),)])


def hf_whisper():
    import transformers
    cfg = transformers.WhisperConfig(d_model=128, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=256,
                                     decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=256,
                                     num_mel_bins=40, max_source_positions=100, vocab_size=1000, pad_token_id=0,
                                     bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    m = transformers.WhisperModel(cfg).get_encoder().eval()
    return dict(model=Pick(m, "last_hidden_state"), calls=[(torch.randn(1, 40, 200),)])


def hf_wav2vec2():
    m = hf("Wav2Vec2Model", "Wav2Vec2Config", hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
           intermediate_size=128, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
           num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
    return dict(model=Pick(m, "last_hidden_state"), calls=[(torch.randn(1, 4000),)])


def hf_mobilebert(mask=True):
    m = hf("MobileBertModel", "MobileBertConfig", hidden_size=128, embedding_size=64, intermediate_size=256,
           num_hidden_layers=2, num_attention_heads=2, intra_bottleneck_size=64, true_hidden_size=64,
           vocab_size=1000, max_position_embeddings=128)
    return dict(model=Pick(m, "last_hidden_state"), calls=[with_mask(32, mask)])


def hf_distilbert(mask=True):
    m = hf("DistilBertModel", "DistilBertConfig", dim=128, n_layers=2, n_heads=2, hidden_dim=256, vocab_size=1000,
           max_position_embeddings=128)
    return dict(model=Pick(m, "last_hidden_state"), calls=[with_mask(32, mask)])


def hf_llama():
    m = hf("LlamaForCausalLM", "LlamaConfig", hidden_size=128, intermediate_size=256, num_hidden_layers=2,
           num_attention_heads=4, num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128)
    return dict(model=Pick(m, "logits", use_cache=False), calls=[(ids(1, 16),)])


for _n, _f in dict(bert_tiny=hf_bert, gpt2_tiny=hf_gpt2, t5_encoder=hf_t5, whisper_encoder=hf_whisper,
                   wav2vec2_tiny=hf_wav2vec2, mobilebert_tiny=hf_mobilebert, distilbert_tiny=hf_distilbert,
                   llama_tiny=hf_llama).items():
    zoo(f"hf_{_n}", "fp32-xnn")(_f)
zoo("hf_bert_tiny_portable", "fp32-portable")(hf_bert)
zoo("hf_gpt2_tiny_portable", "fp32-portable")(hf_gpt2)
zoo("ext_bert_tiny_portable", "ext-portable")(hf_bert)
zoo("ext_8da4w_llama_tiny", "ext-8da4w-xnn")(hf_llama)  # XNNPACK puts tagged quantised weights in the .ptd
for _n, _f in dict(bert_tiny=hf_bert, t5_encoder=hf_t5, whisper_encoder=hf_whisper, mobilebert_tiny=hf_mobilebert,
                   distilbert_tiny=hf_distilbert).items():
    zoo(f"q8d_{_n}", "int8-dyn-xnn")(lambda _f=_f: _f(mask=False) if _f in (hf_bert, hf_mobilebert, hf_distilbert) else _f())
for _r in ("8da4w", "8da8w"):
    zoo(f"ao{_r}_bert_tiny", f"{_r}-xnn")(hf_bert)
    zoo(f"ao{_r}_llama_tiny", f"{_r}-xnn")(hf_llama)


@zoo("dyn_bert_seq", "dynamic-xnn")
def _():
    s = Dim("seq", min=2, max=64)
    return dict(model=Pick(bert_tiny(), "last_hidden_state"),
                calls=[(ids(1, 16), torch.ones(1, 16, dtype=torch.long)), (ids(1, 27), torch.ones(1, 27, dtype=torch.long))],
                dyn=(({1: s}, {1: s}),))  # Pick.forward(*args): one varargs parameter


# ------------------------------------------------------------ KV-cache decoders
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


# ------------------------------------------------------------------ full size
# Full-size programs for footprint and performance work (issues #32, #34): real default configs,
# seeded random weights, realistic input sizes. Registered with full=True: exported only when asked
# (--full, or by name with --only), in this order (priority order), to a separate directory.
def full(name, recipe, **opts):
    return zoo(name, recipe, full=True, **opts)


def tv_vit_b_16():
    m = tv("vit_b_16")
    nn.init.normal_(m.heads.head.weight, std=0.05)  # torchvision starts the head at zero
    nn.init.normal_(m.heads.head.bias, std=0.05)
    return m


def full_image(make, res=224):
    return lambda: dict(model=make(), calls=[(img(h=res),)])


def full_timm(name):
    import timm
    return timm.create_model(name, pretrained=False)  # its default head: 1000 classes


def bert_base():
    return hf("BertModel", "BertConfig")  # BertConfig() defaults: hidden 768, 12 layers, 12 heads, 3072, vocab 30522


BERT_BASE_SEQ = 128
full("full_q8s_resnet50", "int8-static-xnn")(full_image(lambda: tv("resnet50")))
full("full_tv_resnet50", "fp32-xnn")(full_image(lambda: tv("resnet50")))
full("full_tv_mobilenet_v3_small", "fp32-xnn")(full_image(lambda: tv("mobilenet_v3_small")))
full("full_timm_convnext_atto", "fp32-xnn")(full_image(lambda: full_timm("convnext_atto")))
full("full_tv_vit_b_16", "fp32-xnn")(full_image(tv_vit_b_16))
full("full_hf_bert_base", "fp32-xnn")(lambda: dict(
    model=Pick(bert_base(), "last_hidden_state", "pooler_output"),
    calls=[(ids(1, BERT_BASE_SEQ, 30522), torch.ones(1, BERT_BASE_SEQ, dtype=torch.long))]))
full("full_q8d_bert_base", "int8-dyn-xnn")(lambda: dict(  # token ids only: see with_mask
    model=Pick(bert_base(), "last_hidden_state", "pooler_output"), calls=[(ids(1, BERT_BASE_SEQ, 30522),)]))


# SmolLM-135M-class llama through ExecuTorch's own LLM flow (export_llama_lib, the code path of
# `python -m executorch.examples.models.llama.export_llama`), from a seeded random checkpoint.
SMOLLM135 = dict(dim=576, n_layers=30, n_heads=9, n_kv_heads=3, hidden_dim=1536, vocab_size=49152,
                 norm_eps=1e-5, rope_theta=10000.0, ffn_dim_multiplier=1, use_scaled_rope=False)
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


full("full_llama_smollm135_8da4w", "llama-flow-8da4w-sdpa-xnn", stateful=True, export=export_llama_flow,
     params=SMOLLM135, max_seq=512,
     flags=["-kv", "--use_sdpa_with_kv_cache", "-X", "-qmode", "8da4w", "-G", "32"])(lambda: dict(calls=llama_calls()))


def hf_whisper_tiny_encoder():  # whisper-tiny: d_model 384, 4 layers, 6 heads; 30 s = 3000 mel frames
    import transformers
    cfg = transformers.WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
                                     decoder_layers=4, decoder_attention_heads=6, decoder_ffn_dim=1536,
                                     num_mel_bins=80, max_source_positions=1500)
    m = transformers.WhisperModel(cfg).get_encoder().eval()
    return dict(model=Pick(m, "last_hidden_state"), calls=[(torch.randn(1, 80, 3000),)])


full("full_hf_wav2vec2_base", "fp32-xnn")(lambda: dict(  # Wav2Vec2Config() defaults (base); 1 s at 16 kHz
    model=Pick(hf("Wav2Vec2Model", "Wav2Vec2Config"), "last_hidden_state"), calls=[(torch.randn(1, 16000),)]))
full("full_hf_whisper_tiny_encoder", "fp32-xnn")(hf_whisper_tiny_encoder)
full("full_tv_swin_t", "fp32-xnn")(full_image(lambda: tv("swin_t")))
full("full_timm_convnext_tiny", "fp32-xnn")(full_image(lambda: full_timm("convnext_tiny")))
full("full_tv_efficientnet_v2_s", "fp32-xnn")(full_image(lambda: tv("efficientnet_v2_s"), 384))  # its eval size
# the same llama without the llama::* custom ops (XNNPACK sdpa-free attention): the reference runtime
# has no kernels for those ops, so this twin is the one both runtimes run (outputs and speed); same seed,
# so the same checkpoint, inputs and eager reference
full("full_llama_smollm135_8da4w_nosdpa", "llama-flow-8da4w-xnn", stateful=True, export=export_llama_flow,
     params=SMOLLM135, max_seq=512, seed_as="full_llama_smollm135_8da4w", flags=["-kv", "-X", "-qmode", "8da4w", "-G", "32"])(lambda: dict(calls=llama_calls()))


# Qwen3-0.6B (ExecuTorch's examples/models/qwen3/config/0_6b_config.json: qk-norm before rope, HF rope,
# head_dim 128, 8 KV heads) through the same flow with upstream's qwen3_xnnpack_q8da4w.yaml recipe
# (8da4w, custom sdpa, 8-bit per-channel embeddings -E 8,0; its output projection is a separate
# quantised linear here, random like the rest); max_seq 256 keeps the export within memory and time
QWEN3_0_6B = dict(dim=1024, n_layers=28, n_heads=16, n_kv_heads=8, head_dim=128, hidden_dim=3072, vocab_size=151936,
                  norm_eps=1e-6, rope_theta=1000000.0, ffn_dim_multiplier=1, use_scaled_rope=False,
                  use_hf_rope=True, attention_qkv_bias=False, use_qk_norm=True, qk_norm_before_rope=True)
QWEN3_FLAGS = ["--model", "qwen3_0_6b", "-kv", "-X", "-qmode", "8da4w", "-G", "32", "-E", "8,0"]
full("full_llama_qwen3_0_6b_8da4w", "llama-flow-8da4w-sdpa-xnn", stateful=True, export=export_llama_flow,
     params=QWEN3_0_6B, max_seq=256, flags=QWEN3_FLAGS[:3] + ["--use_sdpa_with_kv_cache"] + QWEN3_FLAGS[3:])(
    lambda: dict(calls=llama_calls(vocab=151936)))
# SmolLM-135M with a 2048-token context (the flags of full_llama_smollm135_8da4w): a 1984-token prefill,
# then decode steps at positions 1984.. (the attention over a long cache; tools/bench_llm.py --start-pos)
full("full_llama_smollm135_8da4w_ctx2k", "llama-flow-8da4w-sdpa-xnn", stateful=True, export=export_llama_flow,
     params=SMOLLM135, max_seq=2048, flags=["-kv", "--use_sdpa_with_kv_cache", "-X", "-qmode", "8da4w", "-G", "32"])(
    lambda: dict(calls=llama_calls(prefill=1984, decode=4)))
# their twins without the llama::* custom ops, which both runtimes run (see full_llama_smollm135_8da4w_nosdpa;
# the masked attention there reads the whole max_seq cache at every position)
full("full_llama_qwen3_0_6b_8da4w_nosdpa", "llama-flow-8da4w-xnn", stateful=True, export=export_llama_flow,
     params=QWEN3_0_6B, max_seq=256, seed_as="full_llama_qwen3_0_6b_8da4w", flags=QWEN3_FLAGS)(
    lambda: dict(calls=llama_calls(vocab=151936)))
full("full_llama_smollm135_8da4w_ctx2k_nosdpa", "llama-flow-8da4w-xnn", stateful=True, export=export_llama_flow,
     params=SMOLLM135, max_seq=2048, seed_as="full_llama_smollm135_8da4w_ctx2k",
     flags=["-kv", "-X", "-qmode", "8da4w", "-G", "32"])(lambda: dict(calls=llama_calls(prefill=1984, decode=4)))



def hf_segformer_b0():  # SegformerConfig() defaults are B0 (hidden 32/64/160/256, depths 2x4); ADE20k head, 512x512
    m = hf("SegformerForSemanticSegmentation", "SegformerConfig", num_labels=150)
    return dict(model=Pick(m, "logits"), calls=[(img(h=512),)])


def hf_hifigan():
    """SpeechT5HifiGan with its default config (80 mels, 4x4x4x4 upsampling: 256 samples a frame) on 100
    frames; its random init (normal, std 0.01) drives the waveform to ~0, so the convolutions get
    PyTorch's default init and the input normalisation non-trivial statistics."""
    m = hf("SpeechT5HifiGan", "SpeechT5HifiGanConfig")
    for mod in m.modules():
        if isinstance(mod, (nn.Conv1d, nn.ConvTranspose1d)):
            mod.reset_parameters()
    with torch.no_grad():
        m.mean.normal_(0.0, 0.5)
        m.scale.uniform_(0.5, 1.5)
    return dict(model=m, calls=[(torch.randn(1, 100, 80),)])


def silero_vad():
    """Silero VAD 16 kHz: ExecuTorch's own eager re-creation (examples/models/silero_vad: a Conv1d(1, 258,
    256, stride 128) STFT front end, 4 conv encoder blocks, an LSTM cell, a sigmoid head) with its
    default random init instead of the JIT model's weights; one 512-sample chunk with 64 samples of
    context and a non-zero LSTM state (h, c)."""
    from executorch.examples.models.silero_vad.export_silero_vad import INPUT_SIZE, SileroVAD16k
    return dict(model=SileroVAD16k(), calls=[(torch.randn(1, INPUT_SIZE) * 0.3, torch.randn(2, 1, 128) * 0.5)])


full("full_hf_segformer_b0", "fp32-xnn")(hf_segformer_b0)
full("full_hf_hifigan", "fp32-xnn")(hf_hifigan)
full("full_silero_vad", "fp32-xnn")(silero_vad)



# ExecuTorch's own example models (executorch.examples.models, the names of its MODEL_NAME_TO_MODEL) at
# their example sizes, with random weights where the example downloads pretrained ones (no network):
# mv2 = its Mv2Untrained; dl3, ic3, ic4 the same torchvision / timm constructors without weights;
# mobilebert the default MobileBertConfig (google/mobilebert-uncased) on 128 tokens instead of its
# 8-token tokenizer sentence; efficient_sam its build_efficient_sam_vitt without the checkpoint.
# w2l, emformer_* and edsr need torchaudio / torchsr, which the export environment lacks.
def et_example(module, cls):
    import importlib
    return getattr(importlib.import_module(f"executorch.examples.models.{module}"), cls)()


def et_efficient_sam():
    from executorch.examples.models.efficient_sam.efficient_sam_core.build_efficient_sam import build_efficient_sam
    m = build_efficient_sam(encoder_patch_embed_dim=192, encoder_num_heads=3).eval()  # vitt, no checkpoint
    return dict(model=m, calls=[tuple(et_example("efficient_sam", "EfficientSAM").get_example_inputs())])


def et_mobilebert():
    return dict(model=Pick(hf("MobileBertModel", "MobileBertConfig"), "last_hidden_state", "pooler_output"),
                calls=[(ids(1, BERT_BASE_SEQ, 30522), torch.ones(1, BERT_BASE_SEQ, dtype=torch.long))])


def et_dl3():
    from torchvision.models.segmentation import deeplabv3_resnet50
    return Pick(deeplabv3_resnet50(weights=None, weights_backbone=None), "out")


full("full_et_mv2", "fp32-xnn")(lambda: dict(model=et_example("mobilenet_v2", "MV2UntrainedModel").get_eager_model(),
                                            calls=[(img(h=224),)]))
full("full_et_dl3", "fp32-xnn")(full_image(et_dl3))
full("full_et_ic4", "fp32-xnn")(full_image(lambda: full_timm("inception_v4"), 299))
# ic3: PyTorch's default init (torchvision's own, a truncated normal of std 0.1, drives the logits to ~1e12)
full("full_et_ic3", "fp32-xnn")(full_image(lambda: tv("inception_v3", init_weights=False), 299))
full("full_et_mobilebert", "fp32-xnn")(et_mobilebert)
full("full_et_efficient_sam", "fp32-xnn")(et_efficient_sam)


# ------------------------------------------------------------------- pipeline
def pt2e(model, inputs, dynamic, dyn):
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    cfg = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic)
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
            model = pt2e(model, calls[0], recipe.startswith("int8-dyn"), dyn)
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output directory (outside the repository; default /work/zoo, with --full /work/fullzoo)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="export only these programs (full_* ones included)")
    ap.add_argument("--full", action="store_true",
                    help="export the full-size programs (full_*, left out by default) instead of the small zoo")
    ap.add_argument("--list", action="store_true", help="list the programs and their recipes")
    ap.add_argument("--skip-existing", action="store_true", help="skip programs whose .pte and .npz exist")
    args = ap.parse_args(argv)
    if args.list:
        for n, e in ZOO.items():
            print(f"{n:32s} {e['recipe']}{'  (--full)' if e.get('full') else ''}")
        return 0
    args.out = args.out or ("/work/fullzoo" if args.full else "/work/zoo")
    unknown = set(args.only or ()) - set(ZOO)
    if unknown:
        ap.error(f"unknown programs: {sorted(unknown)}")
    os.makedirs(args.out, exist_ok=True)
    failed = {}
    for name, entry in ZOO.items():
        if args.only and name not in args.only:
            continue
        if not args.only and bool(entry.get("full")) != args.full:
            continue
        if args.skip_existing and all(os.path.exists(os.path.join(args.out, name + x)) for x in (".pte", ".npz")):
            continue
        t0 = time.time()
        try:
            size = export_one(name, entry, args.out)
            print(f"{name}: ok, {size / 1e6:.1f} MB, {time.time() - t0:.0f} s", flush=True)
        except Exception as e:  # one failure does not stop the rest
            note_failure(failed, name, e, t0)
    return report_failures(failed)


def note_failure(failed: dict, name: str, e: Exception, t0: float) -> None:
    """Records one export's failure in `failed` (name -> first line of the error) and prints it
    (ZOO_TRACE=1: with its traceback). Also tools/atlas_export.py's."""
    msg = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
    failed[name] = msg
    print(f"{name}: FAILED after {time.time() - t0:.0f} s: {msg}", file=sys.stderr, flush=True)
    if os.environ.get("ZOO_TRACE"):
        traceback.print_exc()


def report_failures(failed: dict) -> int:
    """Lists the failed exports at the end of a run; the exit status (1 if any failed)."""
    if failed:
        print(f"\n{len(failed)} failed:", file=sys.stderr)
        for n, m in failed.items():
            print(f"  {n}: {m}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
