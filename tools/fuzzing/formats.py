"""The fuzzed formats: their names, their reproducers' file extensions and their targets."""
from __future__ import annotations

from typing import Callable, Dict

from .bundled_target import BundledTarget
from .npz_target import NpzTarget
from .ptd_target import PtdTarget
from .target import Target
from .weight_cache_target import WeightCacheTarget

FORMATS = ("bpte", "ptd", "npz", "wcache")
EXT = {"bpte": ".bpte", "ptd": ".ptd", "npz": ".npz", "wcache": ".etnpwc"}
TARGETS: Dict[str, Callable[[], Target]] = {"bpte": BundledTarget, "ptd": PtdTarget, "npz": NpzTarget,
                                            "wcache": WeightCacheTarget}
