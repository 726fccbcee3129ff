"""ptd: external weights files, loaded with their programs, whose methods are then loaded and run."""
from __future__ import annotations

import os
from typing import Dict, List, Tuple

from .target import MODELS, Target, _read, _corpus_seeds


class PtdTarget(Target):
    name = "ptd"
    PAIRS = (("mlp_external.pte", "mlp_external.ptd", "mlp_external.npz"),
             ("mlp_external_xnn.pte", "mlp_external_xnn.ptd", "mlp_external_xnn.npz"))

    def __init__(self) -> None:
        self._progs: Dict[bytes, Tuple[bytes, object]] = {}

    def seeds(self) -> List[bytes]:
        return [_read(p[1]) for p in self.PAIRS] + _corpus_seeds(self.name)

    def _program_for(self, case: int) -> Tuple[bytes, object]:
        import numpy as np
        pte, _, npz = self.PAIRS[case % len(self.PAIRS)]
        if pte not in self._progs:
            with np.load(os.path.join(MODELS, npz)) as z:
                self._progs[pte] = (_read(pte), z["forward:in:0"])
        return self._progs[pte]

    def run(self, data: bytes, case: int, tmp: str) -> str:
        import executorch_numpy_runtime as en
        pte, x = self._program_for(case)
        prog = en.Runtime.get().load_program(pte, data_files=[data])
        method = prog.load_method("forward")
        out = method([x])
        return f"ran, {len(out)} outputs"
