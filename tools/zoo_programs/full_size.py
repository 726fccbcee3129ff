"""The full-size programs (full_*: real default configs, seeded random weights, realistic inputs),
registered in priority order (the order `zoo_export.py --full` exports them)."""
from __future__ import annotations

import torch
import torch.nn as nn

from .llama_flow import export_llama_flow, llama_calls
from .registry import Pick, full, ids, img
from .small_torchvision import tv
from .small_transformers import hf


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
