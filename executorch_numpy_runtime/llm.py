"""Text generation with ExecuTorch's LLM exports (``examples/models/llama`` and friends), numpy only.

    gen = en.llm.Generator("llama.pte", tokenizer="tokenizer.json")
    for piece in gen.generate_text("Once upon a time", max_new_tokens=32):
        print(piece, end="", flush=True)

    ids = list(gen.generate([1, 15043, 29892], max_new_tokens=8, temperature=0.8, top_p=0.9, seed=0))

The program's constant methods describe it (what ``export_llama`` writes: ``get_max_seq_len``,
``get_max_context_len``, ``get_vocab_size``, ``use_kv_cache``, ``enable_dynamic_shape``, and with
``--metadata`` ``get_bos_id`` / ``get_eos_ids``); missing ones are inferred from the forward
method's signature. KV-cache programs take ``(tokens [1, n], input_pos [1])`` and keep their cache
between calls (reset before each prompt); programs without a cache take ``tokens [1, n]`` and
recompute the whole sequence each step.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np

from .errors import ExecutionError, ProgramLoadError
from .runtime import Program, Runtime
from .tokenizer import Tokenizer, load_tokenizer

__all__ = ["Generator", "GenerationStats", "Tokenizer", "load_tokenizer", "sample"]

_INT_META = ("get_max_seq_len", "get_max_context_len", "get_vocab_size", "get_bos_id", "get_n_layers")
_BOOL_META = ("use_kv_cache", "use_sdpa_with_kv_cache", "enable_dynamic_shape")


@dataclass
class GenerationStats:
    """Timings of the last generate() call (wall clock, seconds)."""

    prompt_tokens: int = 0
    prefill_s: float = 0.0
    generated_tokens: int = 0  # tokens produced (the first comes from the prefill's logits)
    decode_steps: int = 0  # forward calls after the prefill
    decode_s: float = 0.0

    @property
    def prefill_tokens_per_s(self) -> float:
        return self.prompt_tokens / self.prefill_s if self.prefill_s > 0 else 0.0

    @property
    def decode_tokens_per_s(self) -> float:
        return self.decode_steps / self.decode_s if self.decode_s > 0 else 0.0


def sample(logits: np.ndarray, rng: Optional[np.random.Generator] = None, temperature: float = 0.0,
           top_k: Optional[int] = None, top_p: Optional[float] = None) -> int:
    """One token id from a logits row: greedy (argmax) when temperature <= 0, else a draw from
    softmax(logits / temperature) restricted to the top_k most likely ids and to the smallest set
    whose probability reaches top_p."""
    x = np.asarray(logits, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("empty logits")
    if not temperature or temperature <= 0:
        return int(np.argmax(x))
    if rng is None:
        rng = np.random.default_rng()
    if top_k is not None and 0 < top_k < x.size:
        kth = np.partition(x, -top_k)[-top_k]
        x = np.where(x >= kth, x, -np.inf)
    # shifted before the division: a tiny temperature sends the others to -inf, never inf - inf
    with np.errstate(over="ignore", under="ignore"):  # -inf and 0 are the right limits here
        x = (x - np.max(x)) / float(temperature)
        p = np.exp(x)
    p /= p.sum()
    if top_p is not None and 0 < top_p < 1:
        order = np.argsort(-p, kind="stable")
        cum = np.cumsum(p[order])
        keep = order[: int(np.searchsorted(cum, top_p)) + 1]
        q = np.zeros_like(p)
        q[keep] = p[keep]
        p = q / q.sum()
    return int(rng.choice(p.size, p=p))


def _check_sampling(temperature, top_k, top_p) -> None:
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not np.isfinite(temperature) or temperature < 0):
        raise ValueError("temperature must be a finite number >= 0 (0: greedy)")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError("top_k must be a positive int or None")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1):
        raise ValueError("top_p must be in (0, 1] or None")


def _token_ids(values: Iterable[Any], what: str) -> List[int]:
    """Token ids as Python ints: ints and numpy integers only (no strings, floats or bools)."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of int token ids, not {type(values).__name__}")
    ids = []
    for t in values:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
            raise TypeError(f"{what} must hold int token ids; got {t!r} ({type(t).__name__})")
        ids.append(int(t))
    return ids


def _scalar_outputs(values: Sequence[Any]) -> List[Any]:
    out: List[Any] = []
    for v in values:
        out.extend(np.asarray(v).reshape(-1).tolist())
    return out


class Generator:
    """Prefill + decode loop over a loaded LLM program.

    ``program_or_path``: a Program, a .pte path or its bytes. ``tokenizer``: a Tokenizer, a path to
    an HF ``tokenizer.json`` (needs the optional ``tokenizers`` package: ``pip install
    executorch-numpy-runtime[llm]``) or None (token ids only). ``data_files``: the program's .ptd
    weights. Settings the program does not record can be given: ``max_context_len``,
    ``bos_id``, ``eos_ids``.
    """

    def __init__(self, program_or_path: Union[Program, str, os.PathLike, bytes], tokenizer: Any = None, *,
                 data_files: Optional[Sequence[Any]] = None, runtime: Optional[Runtime] = None,
                 method: str = "forward", max_context_len: Optional[int] = None, bos_id: Optional[int] = None,
                 eos_ids: Optional[Iterable[int]] = None) -> None:
        if isinstance(program_or_path, Program):
            if data_files:
                raise ValueError("data_files go with a path, not with an already loaded Program")
            self.program = program_or_path
        else:
            self.program = (runtime or Runtime.get()).load_program(program_or_path, data_files=data_files)
        if method not in self.program.method_names:
            raise ProgramLoadError(f"the program has no method {method!r} (it has {list(self.program.method_names)})")
        self.tokenizer: Optional[Tokenizer] = load_tokenizer(tokenizer) if isinstance(tokenizer, (str, os.PathLike)) \
            else tokenizer
        self.metadata = self._read_metadata(method)
        self._generation: Optional[object] = None  # the live generation that owns the KV cache
        self._method = self.program.load_method(method)
        self._configure(max_context_len, bos_id, eos_ids)
        self.stats = GenerationStats()

    # ------------------------------------------------------------------ setup
    def _read_metadata(self, method: str) -> Dict[str, Any]:
        meta: Dict[str, Any] = {}
        for name in self.program.method_names:
            if name == method or not (name.startswith("get_") or name in _BOOL_META):
                continue
            try:
                values = _scalar_outputs(self.program.load_method(name)([]))
            except Exception:  # noqa: BLE001  (a method that is not a constant: not metadata)
                continue
            if name == "get_eos_ids":
                meta[name] = [int(v) for v in values]
            elif len(values) == 1:
                meta[name] = bool(values[0]) if name in _BOOL_META else values[0]
        return meta

    def _configure(self, max_context_len, bos_id, eos_ids) -> None:
        sig = self._method.metadata
        ins = sig.inputs
        if not ins or ins[0].kind != "tensor" or ins[0].dtype not in ("int64", "int32") or len(ins[0].shape) != 2:
            raise ProgramLoadError(f"{sig.name} does not take token ids [1, n] first: {sig}")
        if len(ins) not in (1, 2) or (len(ins) == 2 and (ins[1].kind != "tensor" or ins[1].dtype not in ("int64", "int32"))):
            raise ProgramLoadError(f"{sig.name} must take (tokens) or (tokens, input_pos): {sig}")
        if not sig.outputs or sig.outputs[0].kind != "tensor":
            raise ProgramLoadError(f"{sig.name} does not return logits first: {sig}")
        meta = self.metadata
        self.use_kv_cache = bool(meta.get("use_kv_cache", len(ins) == 2))
        if self.use_kv_cache != (len(ins) == 2):
            raise ProgramLoadError(f"use_kv_cache={self.use_kv_cache} does not match the signature {sig}")
        self._tok_dtype = np.dtype(ins[0].dtype)
        self._pos_dtype = np.dtype(ins[1].dtype) if self.use_kv_cache else None
        self.dynamic = bool(ins[0].dynamic)
        self.max_tokens_per_call = int(ins[0].shape[1])  # the upper bound (dynamic) or the fixed length
        if self.max_tokens_per_call < 1:
            raise ProgramLoadError(f"{sig.name} takes no tokens: {sig}")
        if self.use_kv_cache and not self.dynamic and self.max_tokens_per_call != 1:
            raise ProgramLoadError(f"a KV-cache program with a fixed input of {self.max_tokens_per_call} "
                                   "tokens is not supported (expected [1, 1] or a dynamic length)")
        recorded = meta.get("get_max_context_len") or meta.get("get_max_seq_len")
        if max_context_len is not None:
            if isinstance(max_context_len, bool) or not isinstance(max_context_len, (int, np.integer)) \
                    or max_context_len < 1:
                raise ValueError(f"max_context_len must be a positive int, not {max_context_len!r}")
            if recorded is not None and max_context_len > recorded:
                raise ValueError(f"max_context_len={max_context_len} is above the program's context length "
                                 f"of {int(recorded)} tokens (its KV cache holds no more)")
        ctx = max_context_len or recorded
        if ctx is None:
            ctx = self.max_tokens_per_call if not self.use_kv_cache else None
        if ctx is None:
            raise ProgramLoadError("the program records no context length: pass max_context_len=")
        self.max_context_len = int(ctx)
        self._recorded_context_len = recorded
        self.vocab_size = meta.get("get_vocab_size")
        self.bos_id = bos_id if bos_id is not None else meta.get("get_bos_id")
        if self.bos_id is None and self.tokenizer is not None:
            self.bos_id = self.tokenizer.bos_id
        if eos_ids is not None:
            self.eos_ids = {int(e) for e in eos_ids}
        elif "get_eos_ids" in meta:
            self.eos_ids = set(meta["get_eos_ids"])
        else:
            self.eos_ids = set(self.tokenizer.eos_ids) if self.tokenizer is not None else set()

    def memory_stats(self) -> Dict[str, int]:
        """The generating method's memory, by kind (Method.memory_stats())."""
        return self._method.memory_stats()

    def reset(self) -> None:
        """Clear the KV cache (done by every generate() call). A generation in progress on this
        Generator ends: its iterator raises RuntimeError when advanced."""
        self._generation = None
        self._method.reset()

    # ---------------------------------------------------------------- forward
    def _logits(self, tokens: Sequence[int], pos: int) -> np.ndarray:
        args: List[Any] = [np.asarray([tokens], dtype=self._tok_dtype)]
        if self.use_kv_cache:
            args.append(np.asarray([pos], dtype=self._pos_dtype))
        if pos + len(tokens) > self.max_context_len:  # generate() stops before; a guard for the rest
            raise ValueError(f"positions {pos}..{pos + len(tokens) - 1} are past the context length of "
                             f"{self.max_context_len} tokens")
        try:
            out = np.asarray(self._method(args)[0])
        except ExecutionError as e:
            if self._recorded_context_len is not None:
                raise
            # the program records no context length: the one given may exceed its cache
            raise ExecutionError(f"{e} (at positions {pos}..{pos + len(tokens) - 1}; the program records no "
                                 f"context length and max_context_len={self.max_context_len} was assumed: "
                                 "its KV cache may hold fewer positions)") from e
        if out.ndim == 0 or out.shape[-1] == 0:
            raise ProgramLoadError(f"{self._method.metadata.name} returned {out.shape}, not logits")
        return out.reshape(-1, out.shape[-1])[-1]  # [1, V] (the last position) or [1, n, V]

    def _prefill(self, ids: List[int]) -> np.ndarray:
        """Feeds the prompt from position 0; returns the last position's logits."""
        if self.use_kv_cache:
            step = self.max_tokens_per_call  # 1 for a fixed-shape program (checked at load)
            logits = None
            for start in range(0, len(ids), step):
                logits = self._logits(ids[start:start + step], start)
            return logits
        return self._full(ids)

    def _full(self, ids: List[int]) -> np.ndarray:
        """No KV cache: the whole sequence (its last window when longer than one call takes)."""
        if self.dynamic:
            return self._logits(ids[-self.max_tokens_per_call:], 0)
        n = self.max_tokens_per_call
        if len(ids) < n:
            raise ValueError(f"this program takes exactly {n} tokens a call and has no KV cache: "
                             f"give a prompt of at least {n} tokens")
        return self._logits(ids[-n:], 0)

    # ------------------------------------------------------------- generation
    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int = 64, *, temperature: float = 0.0,
                 top_k: Optional[int] = None, top_p: Optional[float] = None, seed: Optional[int] = None,
                 stop_tokens: Optional[Iterable[int]] = None, ignore_eos: bool = False) -> Iterator[int]:
        """Yields up to ``max_new_tokens`` new token ids, one as soon as it is sampled. Stops early
        at a stop token (the program's eos ids plus ``stop_tokens``; the stop token is not yielded)
        or when the context is full. Same seed, same settings -> same tokens."""
        ids = _token_ids(prompt_ids, "prompt_ids")
        if not ids:
            raise ValueError("the prompt has no tokens")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError("max_new_tokens must be an int >= 0")
        _check_sampling(temperature, top_k, top_p)
        vocab = self.vocab_size
        bad = [t for t in ids if t < 0 or (vocab is not None and t >= vocab)]
        if bad:
            raise ValueError(f"token id {bad[0]} is out of range for the vocabulary of {vocab}")
        if len(ids) > self.max_context_len:
            raise ValueError(f"the prompt has {len(ids)} tokens; the program's context holds {self.max_context_len}")
        stops = set() if ignore_eos else set(self.eos_ids)
        stops |= set(_token_ids(stop_tokens or (), "stop_tokens"))
        return self._run(ids, max_new_tokens, temperature, top_k, top_p, seed, stops)

    def _run(self, ids, max_new_tokens, temperature, top_k, top_p, seed, stops) -> Iterator[int]:
        rng = np.random.default_rng(seed)
        stats = self.stats = GenerationStats(prompt_tokens=len(ids))
        if max_new_tokens == 0:
            return
        # One Generator has one KV cache: a later generation (or reset()) takes it over, and this
        # one raises when advanced again instead of continuing from another sequence's cache.
        if self.use_kv_cache:
            self.reset()
        self._generation = token = object() if self.use_kv_cache else None
        t0 = time.perf_counter()
        logits = self._prefill(ids)
        stats.prefill_s = time.perf_counter() - t0
        seq = list(ids)
        while True:
            tok = sample(logits, rng, temperature, top_k, top_p)
            if tok in stops:
                return
            stats.generated_tokens += 1
            yield tok
            if token is not None and self._generation is not token:
                raise RuntimeError("this generation's Generator started another generation (or was reset) since "
                                   "its last token; one Generator holds one KV cache: finish or close() an iterator "
                                   "before starting the next, or use one Generator per stream")
            seq.append(tok)
            if stats.generated_tokens >= max_new_tokens or len(seq) >= self.max_context_len:
                return
            t0 = time.perf_counter()
            logits = self._logits([tok], len(seq) - 1) if self.use_kv_cache else self._full(seq)
            stats.decode_s += time.perf_counter() - t0
            stats.decode_steps += 1

    def encode(self, text: str, add_bos: bool = True) -> List[int]:
        if self.tokenizer is None:
            raise ValueError("this Generator has no tokenizer: pass token ids, or tokenizer=")
        ids = list(self.tokenizer.encode(text))
        if add_bos and self.bos_id is not None and (not ids or ids[0] != self.bos_id):
            ids.insert(0, int(self.bos_id))
        return ids

    def generate_text(self, prompt: str, max_new_tokens: int = 64, *, add_bos: bool = True,
                      **kwargs: Any) -> Iterator[str]:
        """Streams the continuation of ``prompt`` as text pieces (needs a tokenizer). Keyword
        arguments are generate()'s."""
        ids = self.encode(prompt, add_bos=add_bos)
        tokens = self.generate(ids, max_new_tokens, **kwargs)
        return self._stream_text(tokens)

    def _stream_text(self, tokens: Iterator[int]) -> Iterator[str]:
        out: List[int] = []
        shown = ""
        for tok in tokens:
            out.append(tok)
            text = self.tokenizer.decode(out)
            if text.endswith("\ufffd"):  # an unfinished multi-byte character: wait for the rest
                continue
            if text.startswith(shown):
                piece, shown = text[len(shown):], text
                if piece:
                    yield piece
            else:  # the decoder rewrote earlier text (rare): emit what is new from here on
                shown = text
        text = self.tokenizer.decode(out) if out else ""
        if text.startswith(shown) and len(text) > len(shown):
            yield text[len(shown):]

    def __repr__(self) -> str:
        return (f"Generator(kv_cache={self.use_kv_cache}, dynamic={self.dynamic}, "
                f"max_context_len={self.max_context_len}, vocab_size={self.vocab_size})")

