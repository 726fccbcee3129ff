"""What a fuzzed format is (its seeds, its mutator, the code under test) and which failures are
documented ones."""
from __future__ import annotations

import os
import random
from typing import List

from .byte_mutations import mutate_bytes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "tests", "models")
CORPUS = os.path.join(ROOT, "tests", "fuzz_corpus")


def _read(name: str) -> bytes:
    with open(os.path.join(MODELS, name), "rb") as f:
        return f.read()


def _corpus_seeds(fmt: str) -> List[bytes]:
    """Kept inputs of this format (tests/fuzz_corpus/pyseed-FMT-*): seeds too."""
    out = []
    if os.path.isdir(CORPUS):
        for n in sorted(os.listdir(CORPUS)):
            if n.startswith(f"pyseed-{fmt}-") or n.startswith(f"pycrash-{fmt}-"):
                with open(os.path.join(CORPUS, n), "rb") as f:
                    out.append(f.read())
    return out



class Target:
    """One format: its seeds, its mutator, and the code under test (``run(data, case)``)."""

    name = ""

    def seeds(self) -> List[bytes]:
        raise NotImplementedError

    def mutate(self, rng: random.Random, seed: bytes, seeds: List[bytes]) -> bytes:
        return mutate_bytes(rng, seed, seeds)

    def generate(self, seed: int, case: int) -> bytes:
        rng = random.Random(f"{seed}:{self.name}:{case}")
        seeds = self.seeds()
        data = rng.choice(seeds)
        for _ in range(1 if rng.randrange(4) else 2):  # sometimes mutate a mutant
            data = self.mutate(rng, data, seeds)
        return data

    def run(self, data: bytes, case: int, tmp: str) -> str:
        raise NotImplementedError



def acceptable(e: BaseException) -> bool:
    """The project's documented failures (see the module's docstring)."""
    from executorch_numpy_runtime import ExecuTorchError
    if isinstance(e, ExecuTorchError):
        return True
    if isinstance(e, (ValueError, TypeError)) and not isinstance(e, UnicodeError):
        return bool(str(e).strip())
    return False
