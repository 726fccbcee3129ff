#!/usr/bin/env python3
"""Export the fixtures of the API tests (issue #19): named inputs/outputs and bundled programs.

Runs ONLY in the export environment (torch 2.13.0 + executorch 1.3.1; FLATC_EXECUTABLE set):

    /path/to/export-venv/bin/python tools/export_api_fixtures.py tests/models

writes
  named_io.pte / .npz      forward(image, *, scale) -> {"logits": ..., "probs": ...}: a keyword
                           input and dict outputs, whose names the program's container metadata keeps
  mlp_bundled.bpte         a bundled program (BP08): a small MLP with two test cases
  mlp_bundled_bad.bpte     the same with one expected output perturbed (a failing case for `etnp verify`)
"""
from __future__ import annotations

import os
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.export import export

from executorch.exir import to_edge_transform_and_lower


class NamedIO(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, image, *, scale):
        y = self.lin(image) * scale
        return {"logits": y, "probs": torch.softmax(y, -1)}


class SmallMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 5)
        self.b = nn.Linear(5, 2)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def named_io(outdir):
    torch.manual_seed(19)
    m = NamedIO().eval()
    image, scale = torch.randn(2, 4), torch.full((1,), 1.5)
    with torch.no_grad():
        outs = m(image, scale=scale)
    et = to_edge_transform_and_lower(export(m, (image,), {"scale": scale})).to_executorch()
    with open(os.path.join(outdir, "named_io.pte"), "wb") as fh:
        fh.write(et.buffer)
    np.savez(os.path.join(outdir, "named_io.npz"), **{
        "forward:in:0": image.numpy(), "forward:in:1": scale.numpy(),
        "forward:out:0": outs["logits"].numpy(), "forward:out:1": outs["probs"].numpy()})
    print("named_io:", len(et.buffer), "bytes")


def bundled(outdir):
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import serialize_from_bundled_program_to_flatbuffer

    torch.manual_seed(8)
    m = SmallMLP().eval()
    xs = [torch.randn(3, 6) for _ in range(2)]
    et = to_edge_transform_and_lower(export(m, (xs[0],))).to_executorch()
    for name, bump in (("mlp_bundled", 0.0), ("mlp_bundled_bad", 0.25)):
        cases = []
        for k, x in enumerate(xs):
            with torch.no_grad():
                y = m(x)
            if k == 1 and bump:
                y = y.clone()
                y[0, 0] += bump
            cases.append(MethodTestCase(inputs=[x], expected_outputs=[y]))
        bp = BundledProgram(et, [MethodTestSuite(method_name="forward", test_cases=cases)])
        data = serialize_from_bundled_program_to_flatbuffer(bp)
        with open(os.path.join(outdir, name + ".bpte"), "wb") as fh:
            fh.write(data)
        print(f"{name}: {len(data)} bytes, identifier {data[4:8]!r}")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/models"
    named_io(out)
    bundled(out)
