"""Tokenizers for en.llm, without torch.

- ``HFTokenizer``: a Hugging Face ``tokenizer.json`` through the optional ``tokenizers`` package
  (``pip install executorch-numpy-runtime[llm]``).
- ``IdTokenizer``: no dependency; text is a list of token ids written as ``"1,2,3"`` (handy for
  programs whose tokenizer is not at hand).
Any object with ``encode(text) -> list[int]``, ``decode(ids) -> str`` and the attributes
``bos_id`` (int or None) and ``eos_ids`` (a set of ints) works as a tokenizer.
"""
from __future__ import annotations

import json
import os
from typing import Iterable, List, Optional, Protocol, Sequence, Set, Union, runtime_checkable

__all__ = ["Tokenizer", "HFTokenizer", "IdTokenizer", "load_tokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    bos_id: Optional[int]
    eos_ids: Set[int]

    def encode(self, text: str) -> List[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


_BOS_NAMES = ("<|begin_of_text|>", "<s>", "<bos>", "<|startoftext|>")
_EOS_NAMES = ("<|end_of_text|>", "<|eot_id|>", "</s>", "<eos>", "<|endoftext|>", "<|im_end|>")


class HFTokenizer:
    """A Hugging Face fast tokenizer (``tokenizer.json``). Encoding adds no special tokens (the
    Generator adds the program's bos id); bos/eos ids are guessed from the usual special-token
    names unless given."""

    def __init__(self, source: Union[str, os.PathLike, "object"], bos_id: Optional[int] = None,
                 eos_ids: Optional[Iterable[int]] = None) -> None:
        try:
            from tokenizers import Tokenizer as _HF
        except ImportError:
            raise ImportError("reading tokenizer.json needs the 'tokenizers' package: "
                              "pip install 'executorch-numpy-runtime[llm]' (or pass token ids)") from None
        if isinstance(source, _HF):
            self._tok = source
        else:
            path = os.fspath(source)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"no tokenizer file {path!r}")
            try:
                self._tok = _HF.from_file(path)
            except Exception as e:  # noqa: BLE001  (the package raises plain Exceptions)
                raise ValueError(f"{path!r} is not a Hugging Face tokenizer.json: {e}") from None
        vocab = self._tok.get_vocab(with_added_tokens=True)
        self.bos_id = bos_id if bos_id is not None else next((vocab[n] for n in _BOS_NAMES if n in vocab), None)
        self.eos_ids = set(eos_ids) if eos_ids is not None else {vocab[n] for n in _EOS_NAMES if n in vocab}
        self.vocab_size = self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> List[int]:
        if not isinstance(text, str):
            raise TypeError(f"encode() takes a str, not {type(text).__name__}")
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=True)


class IdTokenizer:
    """Token ids as text: ``encode("1, 2,3") == [1, 2, 3]``, ``decode([1, 2]) == "1 2"`` (space-led
    pieces when streamed)."""

    def __init__(self, bos_id: Optional[int] = None, eos_ids: Optional[Iterable[int]] = None) -> None:
        self.bos_id = bos_id
        self.eos_ids = set(eos_ids or ())

    @staticmethod
    def parse(text: str) -> List[int]:
        parts = [p for p in text.replace(",", " ").split() if p]
        for p in parts:  # ASCII digits only: int() would also take '1_0', '+3' and other scripts' digits
            if not (p.isascii() and p.isdigit()) or len(p) > 19:
                shown = p if len(p) <= 40 else p[:40] + "..."
                raise ValueError("token ids must be non-negative integers (at most 19 digits) separated by "
                                 f"commas or spaces; {shown!r} is not one")
        return [int(p) for p in parts]

    def encode(self, text: str) -> List[int]:
        return self.parse(text)

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(f" {int(i)}" for i in ids)


def load_tokenizer(source: Union[str, os.PathLike]) -> Tokenizer:
    """A tokenizer from a file: a Hugging Face ``tokenizer.json`` (needs ``tokenizers``)."""
    path = os.fspath(source)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no tokenizer file {path!r}")
    with open(path, "rb") as f:
        head = f.read(1).lstrip()
    if head != b"{":
        raise ValueError(f"{path!r} is not a tokenizer.json (only Hugging Face tokenizer.json files are read; "
                         "pass token ids for other tokenizers)")
    with open(path, encoding="utf-8") as f:
        try:
            json.load(f)
        except ValueError as e:
            raise ValueError(f"{path!r} is not valid JSON: {e}") from None
    return HFTokenizer(path)
