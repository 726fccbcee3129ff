#!/usr/bin/env python3
"""Export tiny llama-architecture programs through ExecuTorch's own LLM exporter (issue #17).

Runs ONLY in the export environment (torch 2.13.0 + executorch 1.3.1, see
../shared/spec/oracle-env.md); the runtime and its tests never import torch.

    FLATC_EXECUTABLE=.../flatc /path/to/export-venv/bin/python tools/export_llm_fixtures.py tests/models [NAME ...]

Each fixture NAME goes through `examples/models/llama/export_llama_lib` (the code path of
`python -m executorch.examples.models.llama.export_llama`) with a seeded random checkpoint
(without one RMSNorm weights and rope tables stay uninitialised and eager logits are NaN) and
writes tests/models/NAME.pte plus tests/models/NAME.npz:

    prompt            int64 [P]      the prompt's token ids
    step_tokens:i     int64 [1, n]   the tokens fed at step i (step 0 = the prompt)
    step_pos:i        int64 [1]      input_pos of step i (KV-cache programs only)
    step_logits:i     float32 [V]    torch-eager logits of the last position at step i
    greedy            int64 [k]      the greedy continuation eager produces
    runtime_logits:i  float32 [V]    the reference runtime's logits on step i's inputs (upstream
                                     ExecuTorch 1.3.1, when $ETNP_REF_PYTHON or the default
                                     /work/envs/ref-venv/bin/python is there; it cannot
                                     run the custom ops: those fixtures carry their twin's)
    runtime_greedy    int64 [k]      the reference runtime's own greedy continuation

Step i > 0 feeds the eager greedy token of step i-1, so a runtime reproducing the logits
reproduces the greedy continuation too. Programs built with ExecuTorch's LLM custom ops
(`--use_sdpa_with_kv_cache`: llama::custom_sdpa / llama::update_cache) cannot run eagerly
here (their eager kernels abort in this torch), so their references come from the same
weights and settings exported without those ops: the ops compute the same attention.
"""
from __future__ import annotations

import copy
import ctypes
import json
import os
import sys
import tempfile

import numpy as np
import torch

SEED = 1234
PARAMS = dict(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=256, hidden_dim=160,
              norm_eps=1e-5, rope_theta=10000.0, multiple_of=32)
MAX_SEQ = 48
PROMPT = [1, 17, 42, 99, 7, 123, 5]
DECODE_STEPS = 6
METADATA = {"get_bos_id": 1, "get_eos_ids": [2]}

# name -> (extra export_llama flags, custom ops used, KV cache)
FIXTURES = {
    "llm_fp32_kv": (["-kv", "-X"], False, True),
    "llm_fp32_sdpa": (["-kv", "--use_sdpa_with_kv_cache", "-X"], True, True),
    "llm_8da4w_kv": (["-kv", "-X", "-qmode", "8da4w", "-G", "32"], False, True),
    "llm_8da4w_sdpa": (["-kv", "--use_sdpa_with_kv_cache", "-X", "-qmode", "8da4w", "-G", "32"], True, True),
    "llm_fp32_nokv": (["-X"], False, False),
    "llm_fp32_kv_static": (["-kv", "--use_sdpa_with_kv_cache", "-X", "--disable_dynamic_shape"], True, True),
}


def load_custom_ops():
    """Registers llama::* with torch: _portable_lib and the AOT library, both with RTLD_LAZY."""
    import executorch
    flags = sys.getdlopenflags()
    sys.setdlopenflags(os.RTLD_LAZY)
    try:
        from executorch.extension.pybindings import _portable_lib  # noqa: F401
    finally:
        sys.setdlopenflags(flags)
    base = list(executorch.__path__)[0]
    ctypes.CDLL(os.path.join(base, "extension/llm/custom_ops/libcustom_ops_aot_lib.so"), mode=os.RTLD_LAZY)
    assert torch.ops.llama.custom_sdpa.default is not None


def write_checkpoint(folder):
    from zoo_export import llama_checkpoint  # (tools/: the same seeded state dict for every flow)
    torch.manual_seed(SEED)
    return llama_checkpoint(folder, PARAMS, MAX_SEQ)


def eager_steps(model, kv, dynamic):
    """Prefill + greedy decode in eager; returns the npz record."""
    rec = {"prompt": np.array(PROMPT, np.int64)}
    greedy = []
    with torch.no_grad():
        def run(tokens, pos):
            if kv:
                out = model(torch.tensor([tokens]), {"input_pos": torch.tensor([pos])})
            else:
                out = model(torch.tensor([tokens]))
            out = out[0] if isinstance(out, tuple) else out
            return out.reshape(-1, out.shape[-1])[-1].float().numpy()

        steps = []
        if kv and not dynamic:  # a fixed [1, 1] input: the prompt goes one token at a time
            for p, t in enumerate(PROMPT):
                logits = run([t], p)
            steps.append((list(PROMPT), 0, logits))
        else:
            steps.append((list(PROMPT), 0, run(list(PROMPT), 0)))
        seq = list(PROMPT)
        for _ in range(DECODE_STEPS):
            nxt = int(np.argmax(steps[-1][2]))
            greedy.append(nxt)
            seq.append(nxt)
            if kv:
                steps.append(([nxt], len(seq) - 1, run([nxt], len(seq) - 1)))
            else:
                steps.append((list(seq), 0, run(list(seq), 0)))
        greedy.append(int(np.argmax(steps[-1][2])))
    for i, (toks, pos, logits) in enumerate(steps):
        rec[f"step_tokens:{i}"] = np.array([toks], np.int64)
        if kv:
            rec[f"step_pos:{i}"] = np.array([pos], np.int64)
        rec[f"step_logits:{i}"] = logits.astype(np.float32)
    rec["greedy"] = np.array(greedy, np.int64)
    return rec


REF_PYTHON = os.environ.get("ETNP_REF_PYTHON", "/work/envs/ref-venv/bin/python")
# Runs in the reference runtime's env: teacher-forced logits on the fixture's steps, then a free
# greedy run from the prompt. argv: pte, npz in, npz out.
REF_SCRIPT = r"""
import sys, numpy as np, executorch_numpy_runtime as en
assert "ref-venv" in en.__file__ or "site-packages" in en.__file__, en.__file__
pte, src, dst = sys.argv[1:4]
d = dict(np.load(src))
n = sum(1 for k in d if k.startswith("step_logits:"))
kv = "step_pos:0" in d
def method():
    return en.Runtime.get().load_program(pte).load_method("forward")
def call(m, toks, pos, static):
    if not kv:
        return np.asarray(m([np.array([toks], np.int64)])[0]).reshape(-1)
    if static:
        for j, t in enumerate(toks):
            out = m([np.array([[t]], np.int64), np.array([pos + j], np.int64)])
    else:
        out = m([np.array([toks], np.int64), np.array([pos], np.int64)])
    return np.asarray(out[0]).reshape(-1)
static = sys.argv[4] == "1"
m = method()
res = {}
for i in range(n):
    pos = int(d["step_pos:%d" % i][0]) if kv else 0
    res["runtime_logits:%d" % i] = call(m, d["step_tokens:%d" % i][0].tolist(), pos, static).astype(np.float32)
m = method()
seq = d["prompt"].tolist()
logits = call(m, seq, 0, static)
greedy = []
for _ in range(len(d["greedy"])):
    greedy.append(int(np.argmax(logits)))
    seq.append(greedy[-1])
    logits = call(m, [greedy[-1]], len(seq) - 1, static) if kv else call(m, seq, 0, static)
res["runtime_greedy"] = np.array(greedy, np.int64)
np.savez(dst, **res)
"""


def runtime_reference(pte, npz, static):
    """The reference runtime's logits on the same steps, merged into the fixture's npz."""
    import subprocess
    if not os.path.exists(REF_PYTHON):
        print(f"  (no reference runtime at {REF_PYTHON}: runtime_logits left out)")
        return
    pte, npz = os.path.abspath(pte), os.path.abspath(npz)
    out = npz + ".ref.npz"
    # run away from the repository: `python -c` puts the working folder first on sys.path, where
    # this project's own executorch_numpy_runtime would shadow the reference one
    with tempfile.TemporaryDirectory() as away:
        r = subprocess.run([REF_PYTHON, "-c", REF_SCRIPT, pte, npz, out, "1" if static else "0"], cwd=away,
                           capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"reference runtime failed on {pte}:\n{r.stderr[-3000:]}")
    merged = dict(np.load(npz))
    merged.update(np.load(out))
    os.remove(out)
    np.savez(npz, **merged)


def reference_key(name):
    """Fixtures sharing this key compute the same logits (custom ops and static shapes change no math)."""
    flags, _, kv = FIXTURES[name]
    return tuple(f for f in flags if f not in ("--use_sdpa_with_kv_cache", "--disable_dynamic_shape")), kv


def export_one(name, outdir, ckpt, params, refs):
    from executorch.examples.models.llama import export_llama_lib as lib
    flags, custom, kv = FIXTURES[name]
    dynamic = "--disable_dynamic_shape" not in flags
    ref_key = reference_key(name)
    captured = {}
    original = lib._prepare_for_llama_export

    def prepare(llm_config):
        manager = original(llm_config)
        if not custom:  # custom-op models abort in eager: their reference is the plain twin's
            captured["rec"] = eager_steps(copy.deepcopy(manager.model).eval(), kv, dynamic)
        return manager

    lib._prepare_for_llama_export = prepare
    try:
        with tempfile.TemporaryDirectory() as tmp:
            args = lib.build_args_parser().parse_args(
                ["-c", ckpt, "-p", params, "--max_seq_length", str(MAX_SEQ), "--max_context_length", str(MAX_SEQ),
                 "--metadata", json.dumps(METADATA), "--output-dir", tmp, "-n", name] + flags)
            torch.manual_seed(SEED)
            path = lib.export_llama(args)
            with open(path, "rb") as f:
                data = f.read()
    finally:
        lib._prepare_for_llama_export = original
    if not custom:
        refs[ref_key] = captured["rec"]
    if ref_key not in refs:  # export the op-free twin first for its eager reference
        raise SystemExit(f"{name}: export its op-free twin before it (reference key {ref_key})")
    with open(os.path.join(outdir, name + ".pte"), "wb") as f:
        f.write(data)
    npz = os.path.join(outdir, name + ".npz")
    np.savez(npz, **refs[ref_key])
    if not custom:  # the reference runtime has no llama::* kernels: custom-op fixtures reuse the twin's
        runtime_reference(os.path.join(outdir, name + ".pte"), npz, not dynamic)
        refs[ref_key] = dict(np.load(npz))
    print(f"{name}: {len(data)} bytes, greedy {refs[ref_key]['greedy'].tolist()}")


def main():
    outdir = sys.argv[1]
    names = sys.argv[2:] or list(FIXTURES)
    bad = [n for n in names if n not in FIXTURES]
    if bad:
        raise SystemExit(f"unknown fixtures {bad}; known: {list(FIXTURES)}")
    load_custom_ops()
    for n in list(names):  # a custom-op fixture needs its op-free twin's eager reference
        if FIXTURES[n][1]:
            twins = [t for t in FIXTURES if not FIXTURES[t][1] and reference_key(t) == reference_key(n)]
            if not twins:
                raise SystemExit(f"{n}: no op-free twin to take eager references from")
            names.append(twins[0])
    names = sorted(dict.fromkeys(names), key=lambda n: FIXTURES[n][1])  # twins first
    refs = {}
    with tempfile.TemporaryDirectory() as folder:
        ckpt, params = write_checkpoint(folder)
        for n in names:
            export_one(n, outdir, ckpt, params, refs)


if __name__ == "__main__":
    main()
