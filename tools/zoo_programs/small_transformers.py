"""The small zoo's Hugging Face transformers programs (hf_*: small configs, seeded random
weights; and their int8, 8da4w/8da8w, dynamic-shape and external-weights variants)."""
from __future__ import annotations

import torch
from torch.export import Dim

from .registry import Pick, ids, zoo


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
