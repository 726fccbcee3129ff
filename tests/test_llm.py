"""LLM programs (issue #17): ExecuTorch's examples/models/llama exports (tools/export_llm_fixtures.py),
with and without the llama::custom_sdpa / update_cache ops, fp32 and 8da4w, KV cache or not,
checked step by step against torch eager (and the reference runtime), and en.llm generation."""
import json
import subprocess
import sys

import numpy as np
import pytest

import executorch_numpy_runtime as en
from executorch_numpy_runtime import llm
from executorch_numpy_runtime.tokenizer import IdTokenizer

from conftest import model_path, reference

FIXTURES = ["llm_fp32_kv", "llm_fp32_sdpa", "llm_8da4w_kv", "llm_8da4w_sdpa", "llm_fp32_kv_static", "llm_fp32_nokv"]
CUSTOM = {"llm_fp32_sdpa", "llm_8da4w_sdpa", "llm_fp32_kv_static"}


def steps(ref):
    return sum(1 for k in ref if k.startswith("step_logits:"))


def teacher_forced(name):
    """Our logits for each recorded step, fed the recorded tokens through the raw Method."""
    ref = reference(name)
    m = en.Runtime.get().load_program(model_path(name)).load_method("forward")
    sig = m.metadata
    out = []
    for i in range(steps(ref)):
        toks = ref[f"step_tokens:{i}"]
        if len(sig.inputs) == 1:
            res = m([toks])
        elif not sig.inputs[0].dynamic:  # [1, 1]: the prompt one token at a time
            pos = int(ref[f"step_pos:{i}"][0])
            for j, t in enumerate(toks[0]):
                res = m([np.array([[t]], np.int64), np.array([pos + j], np.int64)])
        else:
            res = m([toks, ref[f"step_pos:{i}"]])
        out.append(np.asarray(res[0]).reshape(-1, res[0].shape[-1])[-1])
    return ref, out


def test_custom_ops_are_in_the_programs():
    for name in FIXTURES:
        ops = en.Runtime.get().load_program(model_path(name)).operators()
        has = {"llama::custom_sdpa.out", "llama::update_cache.out"} <= set(ops)
        assert has == (name in CUSTOM), (name, ops)


@pytest.mark.parametrize("name", FIXTURES)
def test_logits_per_step_match_eager(name):
    ref, ours = teacher_forced(name)
    for i, o in enumerate(ours):
        eager = ref[f"step_logits:{i}"]
        assert o.shape == eager.shape
        if "8da4w" in name:  # eager's int8 activation rounding differs from XNNPACK's qd8 a little
            assert np.abs(o - eager).max() <= 0.05 * np.abs(eager).max(), (name, i)
        else:
            np.testing.assert_allclose(o, eager, atol=1e-4, rtol=1e-4, err_msg=f"{name} step {i}")
        if f"runtime_logits:{i}" in ref:  # upstream ExecuTorch on the same program
            np.testing.assert_allclose(o, ref[f"runtime_logits:{i}"], atol=1e-4, rtol=1e-4, err_msg=f"{name} step {i}")


@pytest.mark.parametrize("name", ["llm_8da4w_kv", "llm_8da4w_sdpa"])
def test_streamed_4bit_weights_give_the_same_logits(name, monkeypatch):
    """A method whose weights are more than the last-level cache holds reads its 4-bit weights
    with non-temporal prefetches (DelegateHandle::set_weights_stream; ETNP_STREAM_WEIGHTS forces
    either way): decode steps (one row: the path that prefetches) give the same bits either way,
    at 1 and 2 threads, and match eager."""
    ref = reference(name)
    for threads in (1, 2):
        got = {}
        for stream in ("0", "1"):
            monkeypatch.setenv("ETNP_STREAM_WEIGHTS", stream)
            m = en.Runtime(num_threads=threads).load_program(model_path(name)).load_method("forward")
            logits = []
            for i in range(steps(ref)):
                toks, pos = ref[f"step_tokens:{i}"], int(ref[f"step_pos:{i}"][0])
                for j, t in enumerate(toks[0]):  # (one token a call: every call takes the one-row path)
                    res = m([np.array([[t]], np.int64), np.array([pos + j], np.int64)])
                logits.append(np.array(res[0]).reshape(-1)[-res[0].shape[-1]:])
            got[stream] = logits
        for i, (a, b) in enumerate(zip(got["0"], got["1"])):
            assert np.array_equal(a, b), (name, threads, i)
            eager = ref[f"step_logits:{i}"]
            assert np.abs(b - eager).max() <= 0.05 * np.abs(eager).max(), (name, threads, i)


@pytest.mark.parametrize("name", FIXTURES)
def test_greedy_generation(name):
    ref = reference(name)
    gen = en.llm.Generator(model_path(name))
    want = ref["runtime_greedy"] if "runtime_greedy" in ref else ref["greedy"]
    if "8da4w" not in name:
        np.testing.assert_array_equal(want, ref["greedy"])  # fp32: eager's greedy too
    got = list(gen.generate(ref["prompt"].tolist(), len(want), ignore_eos=True))
    assert got == want.tolist()
    again = list(gen.generate(ref["prompt"].tolist(), len(want), ignore_eos=True))  # reset in between
    assert again == got
    st = gen.stats
    assert st.prompt_tokens == len(ref["prompt"]) and st.generated_tokens == len(want)
    assert st.decode_steps == len(want) - 1 and st.prefill_s > 0 and st.decode_tokens_per_s > 0


def test_metadata_and_settings():
    gen = en.llm.Generator(model_path("llm_fp32_sdpa"))
    md = gen.metadata
    assert md["get_max_seq_len"] == 48 and md["get_vocab_size"] == 256 and md["get_n_layers"] == 2
    assert md["use_kv_cache"] is True and md["use_sdpa_with_kv_cache"] is True and md["enable_dynamic_shape"] is True
    assert gen.bos_id == 1 and gen.eos_ids == {2} and gen.max_context_len == 48 and gen.use_kv_cache and gen.dynamic
    static = en.llm.Generator(model_path("llm_fp32_kv_static"))
    assert not static.dynamic and static.max_tokens_per_call == 1
    nokv = en.llm.Generator(model_path("llm_fp32_nokv"))
    assert not nokv.use_kv_cache and nokv.metadata["use_kv_cache"] is False
    assert "kv_cache=False" in repr(nokv)


def test_sampling_is_seeded_and_bounded():
    gen = en.llm.Generator(model_path("llm_fp32_sdpa"))
    prompt = reference("llm_fp32_sdpa")["prompt"].tolist()
    kw = dict(temperature=1.5, top_k=50, top_p=0.95, ignore_eos=True)
    a = list(gen.generate(prompt, 12, seed=7, **kw))
    b = list(gen.generate(prompt, 12, seed=7, **kw))
    c = list(gen.generate(prompt, 12, seed=8, **kw))
    assert a == b and len(a) == 12 and all(0 <= t < 256 for t in a)
    assert a != c
    greedy = list(gen.generate(prompt, 6, ignore_eos=True))
    assert list(gen.generate(prompt, 6, temperature=1.0, top_k=1, seed=3, ignore_eos=True)) == greedy
    assert list(gen.generate(prompt, 6, temperature=1.0, top_p=1e-9, seed=3, ignore_eos=True)) == greedy


def test_sample_function():
    logits = np.array([0.0, 3.0, 1.0, 2.9])
    assert llm.sample(logits) == 1
    rng = np.random.default_rng(0)
    draws = {llm.sample(logits, rng, temperature=1.0, top_k=2) for _ in range(200)}
    assert draws == {1, 3}
    draws = {llm.sample(logits, rng, temperature=1.0, top_p=0.5) for _ in range(100)}
    assert draws <= {1, 3} and 1 in draws


def test_stop_tokens_context_and_bad_settings():
    ref = reference("llm_fp32_kv")
    prompt, greedy = ref["prompt"].tolist(), ref["greedy"].tolist()
    gen = en.llm.Generator(model_path("llm_fp32_kv"))
    assert list(gen.generate(prompt, 10, stop_tokens=[greedy[2]])) == greedy[:2]
    eos = en.llm.Generator(model_path("llm_fp32_kv"), eos_ids=[greedy[3]])
    assert list(eos.generate(prompt, 10)) == greedy[:3]
    assert len(list(gen.generate(prompt, 1000, ignore_eos=True))) == 48 - len(prompt)  # the context is full
    assert list(gen.generate(prompt, 0)) == []
    for bad in (dict(temperature=-1), dict(top_k=0), dict(top_p=0.0), dict(top_p=1.5)):
        with pytest.raises(ValueError):
            gen.generate(prompt, 4, **bad)
    with pytest.raises(ValueError, match="out of range"):
        gen.generate([1, 256], 4)
    with pytest.raises(ValueError, match="context"):
        gen.generate([1] * 49, 4)
    with pytest.raises(ValueError, match="no tokens"):
        gen.generate([], 4)
    with pytest.raises(ValueError, match="tokenizer"):
        list(gen.generate_text("hello", 4))


def test_no_kv_program_recomputes():
    ref = reference("llm_fp32_nokv")
    gen = en.llm.Generator(model_path("llm_fp32_nokv"))
    assert list(gen.generate(ref["prompt"].tolist(), 7, ignore_eos=True)) == ref["greedy"].tolist()


def test_input_pos_out_of_range_is_a_clear_error():
    """(The rope-table slice fails first in these programs; test_llm_ops.py checks the kernels' own
    range errors.)"""
    m = en.Runtime.get().load_program(model_path("llm_fp32_sdpa")).load_method("forward")
    with pytest.raises(en.ExecutionError):
        m([np.array([[5, 6]], np.int64), np.array([47], np.int64)])
    with pytest.raises(en.ExecutionError):
        m([np.array([[5]], np.int64), np.array([48], np.int64)])
    with pytest.raises(en.ExecutionError):
        m([np.array([[5]], np.int64), np.array([-1], np.int64)])
    m.reset()  # still usable after the errors
    ref = reference("llm_fp32_sdpa")
    out = m([ref["step_tokens:0"], ref["step_pos:0"]])
    np.testing.assert_allclose(np.asarray(out[0]).reshape(-1), ref["step_logits:0"], atol=1e-4, rtol=1e-4)


def test_id_tokenizer():
    t = IdTokenizer(bos_id=1, eos_ids=[2])
    assert t.encode("1, 2 3,4") == [1, 2, 3, 4] and t.decode([5, 6]) == " 5 6"
    with pytest.raises(ValueError):
        t.encode("1,x")
    gen = en.llm.Generator(model_path("llm_fp32_kv"), t)
    text = "".join(gen.generate_text("17,42,99,7,123,5", 7, ignore_eos=True))
    assert text.split() == [str(x) for x in reference("llm_fp32_kv")["greedy"]]


def _tiny_tokenizer(path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, decoders, trainers
    tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))  # SentencePiece-style: "\u2581" marks spaces
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<s>", "</s>"])
    corpus = ["once upon a time there was a tiny model", "it generated text with numpy only, no torch!", "héllo wörld ☃"] * 20
    tok.train_from_iterator(corpus, trainer)
    tok.save(str(path))
    return tok


def test_hf_tokenizer_round_trip_and_generate_text(tmp_path):
    _tiny_tokenizer(tmp_path / "tokenizer.json")
    tok = en.llm.load_tokenizer(tmp_path / "tokenizer.json")
    assert tok.bos_id == 1 and tok.eos_ids == {2}
    for text in ("once upon a time", "héllo wörld ☃", "numpy only, no torch!"):
        assert tok.decode(tok.encode(text)) == text
    gen = en.llm.Generator(model_path("llm_fp32_sdpa"), str(tmp_path / "tokenizer.json"))
    ids = gen.encode("a tiny")
    assert ids[0] == 1 and max(ids) < 256
    pieces = list(gen.generate_text("a tiny", 8, ignore_eos=True))
    toks = list(gen.generate(ids, 8, ignore_eos=True))
    assert "".join(pieces) == tok.decode(toks)


def test_bad_tokenizer_files(tmp_path):
    p = tmp_path / "tok.model"
    p.write_bytes(b"\x00\x01binary")
    with pytest.raises(ValueError, match="tokenizer.json"):
        en.llm.load_tokenizer(p)
    with pytest.raises(FileNotFoundError):
        en.llm.load_tokenizer(tmp_path / "missing.json")


def test_not_an_llm_program():
    with pytest.raises(en.ProgramLoadError):
        en.llm.Generator(model_path("mlp"))


def cli(*args):
    return subprocess.run([sys.executable, "-m", "executorch_numpy_runtime", "generate", *args],
                          capture_output=True, text=True)


def test_cli_generate_ids():
    ref = reference("llm_fp32_sdpa")
    r = cli(model_path("llm_fp32_sdpa"), "--prompt-ids", ",".join(map(str, ref["prompt"])), "--max-new-tokens", "7",
            "--ignore-eos")
    assert r.returncode == 0, r.stderr
    assert [int(x) for x in r.stdout.split()] == ref["greedy"].tolist()
    assert "prefill:" in r.stderr and "decode:" in r.stderr and "tokens/s" in r.stderr
    r = cli(model_path("llm_fp32_sdpa"), "--prompt", "hello")
    assert r.returncode == 2 and "--tokenizer" in r.stderr
    r = cli(model_path("llm_fp32_sdpa"), "--prompt-ids", "1,x")
    assert r.returncode == 2 and "integers" in r.stderr
    r = cli(model_path("llm_fp32_sdpa"), "--prompt-ids", "1,2", "--top-p", "2")
    assert r.returncode == 2 and "top_p" in r.stderr


def test_cli_generate_stats_reports_weight_bytes_and_bandwidth_fraction():
    import re

    from executorch_numpy_runtime.llm_bandwidth import decode_report, read_bandwidth, weight_bytes

    gen = llm.Generator(model_path("llm_8da4w_sdpa"))
    st = gen.memory_stats()
    w = weight_bytes(st)
    assert w == st["packed_weights"] + st.get("mapped_weights", 0) + st["constants"] and w > 0
    r = decode_report(st, 100.0, 2.0 * w * 100.0)  # decoding at half a bandwidth of 2 x the weights x 100/s
    assert r["weight_bytes_per_token"] == w and r["achieved_bytes_per_s"] == w * 100.0
    assert r["fraction_of_bandwidth"] == pytest.approx(0.5)
    assert decode_report(st, 10.0, 0.0)["fraction_of_bandwidth"] == 0.0
    assert read_bandwidth(1 << 20, 2) > 0
    with pytest.raises(ValueError):
        read_bandwidth(0)
    out = cli(model_path("llm_8da4w_sdpa"), "--prompt-ids", "1,2,3", "--max-new-tokens", "4", "--stats")
    assert out.returncode == 0, out.stderr
    m = re.search(r"weights streamed a decode step: ([0-9.]+) MiB; decode reads ([0-9.]+) GB/s of them, "
                  r"([0-9]+)% of the ([0-9.]+) GB/s", out.stderr)
    assert m, out.stderr
    assert float(m.group(1)) == pytest.approx(w / 2 ** 20, abs=0.05)
    assert float(m.group(4)) > 0
    plain = cli(model_path("llm_8da4w_sdpa"), "--prompt-ids", "1,2,3", "--max-new-tokens", "4")
    assert plain.returncode == 0 and "weights streamed" not in plain.stderr


def test_cli_generate_text(tmp_path):
    tok = _tiny_tokenizer(tmp_path / "tokenizer.json")
    r = cli(model_path("llm_8da4w_sdpa"), "--tokenizer", str(tmp_path / "tokenizer.json"), "--prompt", "a tiny",
            "--max-new-tokens", "6", "--temperature", "0.8", "--top-k", "40", "--top-p", "0.9", "--seed", "1",
            "--ignore-eos", "--threads", "1")
    assert r.returncode == 0, r.stderr
    gen = en.llm.Generator(model_path("llm_8da4w_sdpa"), str(tmp_path / "tokenizer.json"))
    want = tok.decode(list(gen.generate(gen.encode("a tiny"), 6, temperature=0.8, top_k=40, top_p=0.9, seed=1,
                                        ignore_eos=True)))
    assert r.stdout.rstrip("\n") == want
    json.dumps(gen.metadata)  # plain Python values
