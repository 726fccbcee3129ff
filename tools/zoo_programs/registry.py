"""The zoo's registry: ZOO (name -> recipe, builder, options, in registration order: the export
order), the decorators that fill it (zoo, full) and the helpers the builders share (seeded inputs, Pick)."""
from __future__ import annotations

import torch
import torch.nn as nn


ZOO = {}


def zoo(name, recipe, **opts):
    """Register a builder: () -> dict(model=..., calls=[inputs, ...], dyn=dynamic_shapes)."""
    def deco(fn):
        ZOO[name] = dict(recipe=recipe, build=fn, **opts)
        return fn
    return deco


def img(c=3, h=128, w=None, n=1):
    return torch.rand(n, c, h, w or h) * 2 - 1


def ids(n, s, vocab=1000):
    return torch.randint(0, vocab, (n, s))


class Pick(nn.Module):
    """Wrap a model whose output is a ModelOutput / dict: return the named tensor fields."""

    def __init__(self, m, *fields, **kw):
        super().__init__()
        self.m, self.fields, self.kw = m, fields, kw

    def forward(self, *args):
        out = self.m(*args, **self.kw)
        if not self.fields:
            return out
        res = tuple(out[f] for f in self.fields)
        return res if len(res) > 1 else res[0]


# Full-size programs for footprint and performance work (issues #32, #34): real default configs,
# seeded random weights, realistic input sizes. Registered with full=True: exported only when asked
# (--full, or by name with --only), in registration order (priority order), to a separate directory.
def full(name, recipe, **opts):
    return zoo(name, recipe, full=True, **opts)
