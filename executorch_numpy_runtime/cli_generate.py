"""``etnp generate``: stream text (or token ids) from an LLM program (see llm.py).

    etnp generate MODEL.pte --tokenizer tokenizer.json --prompt "Once upon a time" [--max-new-tokens N]
        [--temperature T] [--top-k K] [--top-p P] [--seed S] [--data-file X.ptd] [--threads N]
    etnp generate MODEL.pte --prompt-ids 1,2,3 ...       token ids in, token ids out (no tokenizer)

The continuation goes to stdout as it is generated; prefill and decode speeds go to stderr.
"""
from __future__ import annotations

import argparse
import sys

from .cli_extra import MAX_COUNT, THREADS, bounded_int, finite_float


def add_generate_parser(sub) -> None:
    s = sub.add_parser("generate", help="generate text with an LLM program (KV cache or not)")
    s.add_argument("model")
    s.add_argument("--tokenizer", help="a Hugging Face tokenizer.json (needs the 'tokenizers' package)")
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--prompt", help="prompt text (needs --tokenizer)")
    g.add_argument("--prompt-ids", help="prompt token ids, e.g. 1,2,3 (no tokenizer needed)")
    s.add_argument("--max-new-tokens", type=bounded_int(0, MAX_COUNT), default=64)
    s.add_argument("--temperature", type=finite_float(0.0, name="temperature"), default=0.0,
                   help="0 (default): greedy")
    s.add_argument("--top-k", type=bounded_int(1, MAX_COUNT), default=None)
    s.add_argument("--top-p", type=finite_float(0.0, 1.0, lo_open=True, name="top_p"), default=None)
    s.add_argument("--seed", type=bounded_int(0, 2 ** 64 - 1), default=None)
    s.add_argument("--data-file", action="append", default=[], help="external weights (.ptd); repeatable")
    s.add_argument("--threads", type=THREADS, default=None)
    s.add_argument("--no-bos", action="store_true", help="do not prepend the program's bos id to --prompt")
    s.add_argument("--ignore-eos", action="store_true", help="keep going past end-of-sequence tokens")
    s.add_argument("--stats", action="store_true",
                   help="also print the weight bytes a decode step streams and the fraction of this machine's "
                        "measured memory read bandwidth the decode reached")


def cmd_generate(args: argparse.Namespace) -> int:
    from .cli import UsageError
    from .llm import Generator
    from .runtime import Runtime
    from .tokenizer import IdTokenizer

    if args.prompt is not None and not args.tokenizer:
        raise UsageError("--prompt needs --tokenizer (or give --prompt-ids)")
    try:
        runtime = Runtime(num_threads=args.threads) if args.threads else Runtime.get()
        gen = Generator(args.model, args.tokenizer, data_files=args.data_file, runtime=runtime)
        opts = dict(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed,
                    ignore_eos=args.ignore_eos)
        if args.prompt is not None:
            stream = gen.generate_text(args.prompt, args.max_new_tokens, add_bos=not args.no_bos, **opts)
        else:
            ids = IdTokenizer.parse(args.prompt_ids)
            stream = (f" {t}" if i else str(t) for i, t in enumerate(gen.generate(ids, args.max_new_tokens, **opts)))
        for piece in stream:
            sys.stdout.write(piece)
            sys.stdout.flush()
    except ImportError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:  # a bad prompt or sampling setting
        raise UsageError(str(e)) from None
    sys.stdout.write("\n")
    st = gen.stats
    print(f"prefill: {st.prompt_tokens} tokens in {st.prefill_s * 1e3:.1f} ms ({st.prefill_tokens_per_s:.1f} tokens/s); "
          f"decode: {st.decode_steps} steps in {st.decode_s * 1e3:.1f} ms ({st.decode_tokens_per_s:.1f} tokens/s)",
          file=sys.stderr)
    if args.stats:
        from .llm_bandwidth import decode_report, read_bandwidth

        r = decode_report(gen.memory_stats(), st.decode_tokens_per_s, read_bandwidth())
        print(f"weights streamed a decode step: {r['weight_bytes_per_token'] / 2 ** 20:.1f} MiB; decode reads "
              f"{r['achieved_bytes_per_s'] / 1e9:.2f} GB/s of them, {100 * r['fraction_of_bandwidth']:.0f}% of the "
              f"{r['measured_bytes_per_s'] / 1e9:.2f} GB/s this machine reads (a numpy pass over 256 MiB)",
              file=sys.stderr)
    return 0
