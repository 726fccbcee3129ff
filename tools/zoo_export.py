#!/usr/bin/env python3
"""Export the real-model zoo: real architectures with seeded random weights, as users export them.

Runs ONLY in the export environment (torch 2.13.0 + executorch 1.3.1 + torchvision + timm +
transformers + torchao; see shared/spec/oracle-env.md). No network: every model is built from its
class or a small ``*Config`` with seeded random weights.

    FLATC_EXECUTABLE=.../flatc python tools/zoo_export.py [--out /work/zoo] [--only NAME ...] [--full] [--list]

The default is the small zoo. ``--full`` exports the full-size programs instead (``full_*``: real default
configs - torchvision resnet50 / vit_b_16, BERT-base, a SmolLM-135M-class llama through export_llama, ... -
seeded random weights, realistic inputs such as 224x224 images or 128 tokens; default --out
/work/fullzoo), in priority order; ``--only`` names programs of either set.

For every program NAME it writes, into the output directory (never the repository):
  NAME.pte         the ExecuTorch program
  NAME*.ptd        the external data files of ``ext_*`` programs (named in the meta record)
  NAME.npz         ``forward:in:i`` / ``forward:out:i``: seeded inputs and torch-eager outputs of the
                   first call (the layout of tools/export_fixtures.py); programs called more than once
                   (KV-cache decoders: successive calls on one loaded method; dynamic shapes: one call
                   per shape) also hold ``forward:call{k}:in:i`` / ``forward:call{k}:out:i`` for every
                   call k; ``meta`` is a JSON string: recipe, number of calls, stateful, data_files,
                   in_dim_orders (each input's torch dim order; inputs are stored in logical layout) and
                   ``out_steps`` (the quantisation step of each output when it leaves a quantised op,
                   else null).
The eager reference is the model the program was exported from: for PT2E recipes the converted
(quantise/dequantise) module, for torchao recipes the quantize_-d module, so a program is checked
against what it should compute, not against the float model.

Recipes (the name prefix says which):
  fp32-xnn         fp32, XnnpackPartitioner            (tv_*, timm_*, hf_*)
  fp32-portable    fp32, no partitioner                (*_portable)
  int8-static-xnn  PT2E XNNPACKQuantizer, per-channel static int8, calibrated on the input (q8s_*)
  int8-dyn-xnn     PT2E XNNPACKQuantizer, per-channel weights, dynamic int8 activations  (q8d_*)
  int8-dyn-qc4w-xnn / int8-static-qc4w-xnn  the same with per-channel int4 weights (weight_qmin -8,
                   weight_qmax 7: XNNPACK qcint4)
  8da4w-xnn / 8da8w-xnn   torchao quantize_(Int8DynamicActivationIntxWeightConfig) with int4
                   weights in groups of 32 / int8 per-channel weights (ao_*)
  kv-cache-*       llama-architecture decoders with a KV-cache buffer mutated in forward (kv_*)
  dynamic-xnn      a dynamic batch or sequence dimension, one reference per shape (dyn_*)
  channels-last-xnn  inputs in torch.channels_last, so the program's inputs have dim order NHWC (cl_*;
                   weights stay contiguous: XNNPACK's lowering asserts NCHW constant weights)
  llama-flow-*     ExecuTorch's own LLM exporter (examples/models/llama export_llama_lib) from a seeded
                   random checkpoint (full_llama_*); its eager reference is the model the flow's source
                   transforms build without the llama custom ops (see export_llama_flow; meta "reference")
  ext-*            ExecutorchBackendConfig(external_constants=True): weights in a .ptd (ext_*); for
                   XNNPACK the delegate's constants are tagged too (delegate_external_constants_pass_
                   unlifted, as export_llama does), which only moves quantised (torchao) weights
Each program is exported in its own try/except; failures are listed at the end (exit status 1).
The programs and the pipeline are in tools/zoo_programs/: the registry, one module per family of
programs (imported below in the order they register: the export order), the export pipeline and
the LLM flow.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

# the programs register in ZOO as their modules are imported: in this order (the export order)
from zoo_programs import small_torchvision, small_timm, small_transformers, small_kv_decoders  # noqa: F401
from zoo_programs import full_size  # noqa: F401
from zoo_programs.llama_flow import llama_checkpoint  # noqa: F401  (tools/export_llm_fixtures.py's)
from zoo_programs.pipeline import SEED, export_one  # noqa: F401  (export_one: tools/atlas_export.py's too)
from zoo_programs.registry import ZOO


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output directory (outside the repository; default /work/zoo, with --full /work/fullzoo)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="export only these programs (full_* ones included)")
    ap.add_argument("--full", action="store_true",
                    help="export the full-size programs (full_*, left out by default) instead of the small zoo")
    ap.add_argument("--list", action="store_true", help="list the programs and their recipes")
    ap.add_argument("--skip-existing", action="store_true", help="skip programs whose .pte and .npz exist")
    args = ap.parse_args(argv)
    if args.list:
        for n, e in ZOO.items():
            print(f"{n:32s} {e['recipe']}{'  (--full)' if e.get('full') else ''}")
        return 0
    args.out = args.out or ("/work/fullzoo" if args.full else "/work/zoo")
    unknown = set(args.only or ()) - set(ZOO)
    if unknown:
        ap.error(f"unknown programs: {sorted(unknown)}")
    os.makedirs(args.out, exist_ok=True)
    failed = {}
    for name, entry in ZOO.items():
        if args.only and name not in args.only:
            continue
        if not args.only and bool(entry.get("full")) != args.full:
            continue
        if args.skip_existing and all(os.path.exists(os.path.join(args.out, name + x)) for x in (".pte", ".npz")):
            continue
        t0 = time.time()
        try:
            size = export_one(name, entry, args.out)
            print(f"{name}: ok, {size / 1e6:.1f} MB, {time.time() - t0:.0f} s", flush=True)
        except Exception as e:  # one failure does not stop the rest
            note_failure(failed, name, e, t0)
    return report_failures(failed)


def note_failure(failed: dict, name: str, e: Exception, t0: float) -> None:
    """Records one export's failure in `failed` (name -> first line of the error) and prints it
    (ZOO_TRACE=1: with its traceback). Also tools/atlas_export.py's."""
    msg = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
    failed[name] = msg
    print(f"{name}: FAILED after {time.time() - t0:.0f} s: {msg}", file=sys.stderr, flush=True)
    if os.environ.get("ZOO_TRACE"):
        traceback.print_exc()


def report_failures(failed: dict) -> int:
    """Lists the failed exports at the end of a run; the exit status (1 if any failed)."""
    if failed:
        print(f"\n{len(failed)} failed:", file=sys.stderr)
        for n, m in failed.items():
            print(f"  {n}: {m}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
