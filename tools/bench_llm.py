#!/usr/bin/env python3
"""Prefill and decode tokens/s of a KV-cache LLM program (tokens [1, n], input_pos [1]) with
plain Method calls, so the same script times this runtime and the reference one (same API):

    taskset -c 0 .venv/bin/python tools/bench_llm.py tests/models/llm_fp32_kv.pte --threads 1
    taskset -c 0 /work/envs/ref-venv/bin/python tools/bench_llm.py tests/models/llm_fp32_kv.pte

Greedy decoding from a fixed prompt; each repeat loads a fresh method (an empty cache); the best
repeat counts. With --start-pos P the cache first holds P filler tokens (untimed calls of at most
--fill-chunk tokens at positions 0..P-1), so the prompt is prefilled at position P and the decode
steps attend over a long context (P + prompt + decode must fit the program's max_seq_len).
Prints one JSON line; with this runtime also the weight bytes a decode step streams and the
fraction of the measured memory read bandwidth the decode reached (llm_bandwidth.py; the KV cache
a step reads comes on top).
Pinned to fewer CPUs than the machine has, it re-runs itself seeing only those in sysfs
(tools/cpu_view.py, as root): the reference sizes its thread pool by the machine's CPU count.
"""
import argparse
import json
import time

import numpy as np

if __name__ == "__main__":
    import cpu_view

    cpu_view.reexec_pinned()
    import executorch_numpy_runtime as en

    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--decode", type=int, default=15)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--start-pos", type=int, default=0, help="fill the cache with this many tokens first (untimed)")
    ap.add_argument("--fill-chunk", type=int, default=256, help="tokens per untimed filling call")
    ap.add_argument("--threads", type=int, default=None, help="this runtime only (the reference has no such knob)")
    a = ap.parse_args()
    rt = en.Runtime(num_threads=a.threads) if a.threads else en.Runtime.get()
    prog = rt.load_program(a.model)
    prompt = (np.arange(a.prompt_len, dtype=np.int64) * 37 + 5) % 250 + 3
    filler = (np.arange(a.start_pos, dtype=np.int64) * 53 + 11) % 250 + 3
    best_p, best_d, toks = float("inf"), float("inf"), None
    for r in range(a.repeats + 1):
        m = prog.load_method("forward")
        m([prompt[None, :1], np.array([0], np.int64)])  # warms a lazy load; overwritten below
        for s in range(0, a.start_pos, a.fill_chunk):
            m([filler[None, s:s + a.fill_chunk], np.array([s], np.int64)])
        t0 = time.perf_counter()
        logits = m([prompt[None, :], np.array([a.start_pos], np.int64)])[0]
        t1 = time.perf_counter()
        out = []
        pos = a.start_pos + a.prompt_len
        for _ in range(a.decode):
            tok = int(np.argmax(np.asarray(logits).reshape(-1)))
            out.append(tok)
            logits = m([np.array([[tok]], np.int64), np.array([pos], np.int64)])[0]
            pos += 1
        t2 = time.perf_counter()
        if r == 0:
            toks = out
            continue  # warm-up
        assert out == toks, "decoding is not deterministic"
        best_p, best_d = min(best_p, t1 - t0), min(best_d, t2 - t1)
    row = {"runtime": en.__file__, "start_pos": a.start_pos, "prefill_tokens_per_s": round(a.prompt_len / best_p, 1),
           "decode_tokens_per_s": round(a.decode / best_d, 1)}
    try:  # this runtime: the weight bytes a decode step streams, and the fraction of the bandwidth
        from executorch_numpy_runtime.llm_bandwidth import decode_report, read_bandwidth
    except ImportError:  # (the reference runtime has no memory statistics)
        pass
    else:
        rep = decode_report(m.memory_stats(), a.decode / best_d, read_bandwidth())
        row.update({k: (round(v, 3) if isinstance(v, float) else v) for k, v in rep.items()})
    row["tokens"] = toks
    print(json.dumps(row))
