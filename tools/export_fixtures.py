#!/usr/bin/env python3
"""Export the .pte test fixtures and their torch-eager references.

Runs ONLY in a separate environment with torch==2.13.0 and executorch==1.3.1
(see ../shared/spec/oracle-env.md); the runtime and its tests never import torch.

    /path/to/export-venv/bin/python tools/export_fixtures.py tests/models [NAME ...]

For every fixture NAME it writes tests/models/NAME.pte and tests/models/NAME.npz.
The .npz holds, for each method M, the seeded inputs ``M:in:i`` and the eager
outputs ``M:out:i`` (torch eager, computed on the same inputs). The models are in
tools/fixture_models/ (one module per family); this file lists the fixtures and exports them.
"""
from __future__ import annotations

import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.export import Dim, export

from executorch.exir import to_edge_transform_and_lower

# the fixtures' models, one module per family (tools/fixture_models/)
from fixture_models import issue14_ops as opsm  # the operators of issue #14
from fixture_models.custom_ops import (CustomLSTM, CustomTriple, PyOp, define_custom_ops,
                                       define_quantized_out_variants)
from fixture_models.networks import (MLP, Add, ChannelsLast, Encoder, Half, IntBool, KVState, MobileNetV2,
                                     MultiMethodA, MultiMethodB, SmallCNN)
from fixture_models.portable_ops import (PRESERVED_OPS, Binary, Conv1dNet, Conv3dNet, Dtypes, Index, MaskIndex,
                                         MaskOps, MoreMath, MoreReduce, MoreShapes, Preserved, Reduce, Shapes, Unary)
from fixture_models.quantized_models import (AddConstant, ConvChainQ8, FireQ8, InvertedResidualQ8, LayerNorms,
                                             Q4MLP, QBertBlocks, QBertLNBlocks, QC4MLP, QLinear, Q4Wide, QMLP, QuantPortable,
                                             QuantToken, ReferenceQ8, RegNetBlockQ8, ShuffleUnitQ8, SiluDepthwiseQ8,
                                             quantize_8da4w)
from fixture_models.xnnpack_models import (ActCNN, ConvInputs, ConvRegimes, DeadTaps, HalfXnn, InputViews,
                                           ResBlock1d, ScalarIO, Winograd1dConvs, WinogradConvs, XnnOps)

SEED = 1234


def rnd(*shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    return (torch.rand(*shape) * (hi - lo) + lo).to(dtype)


# ------------------------------------------------------------------ fixtures
def fixtures():
    torch.manual_seed(SEED)
    f = {}
    f["add"] = dict(methods={"forward": (Add(), (rnd(3), rnd(3)))})
    f["mlp"] = dict(methods={"forward": (MLP(), (rnd(4, 16),))})
    f["small_cnn"] = dict(methods={"forward": (SmallCNN(), (rnd(2, 3, 16, 16),))})
    f["multi_method"] = dict(methods={"forward": (MultiMethodA(), (rnd(2, 3),)),
                                      "matmul": (MultiMethodB(), (rnd(2, 3), rnd(3, 4)))})
    f["int_bool"] = dict(methods={"forward": (IntBool(), (torch.randint(-5, 6, (3, 4)), torch.rand(3, 4) > 0.5))})
    f["bf16"] = dict(methods={"forward": (Half().to(torch.bfloat16), (rnd(2, 8, dtype=torch.bfloat16),))})
    f["half"] = dict(methods={"forward": (Half().half(), (rnd(2, 8, dtype=torch.float16),))})
    f["mlp_dynamic"] = dict(methods={"forward": (MLP(), (rnd(3, 16),))},
                            dynamic={"forward": ({0: Dim("batch", min=1, max=8)},)})
    f["ops_unary"] = dict(methods={"forward": (Unary(), (rnd(3, 5),))})
    f["ops_binary"] = dict(methods={"forward": (Binary(), (rnd(3, 4), rnd(1, 4), torch.randint(-9, 9, (3, 4)),
                                                           torch.randint(-9, 9, (3, 4))))})
    f["ops_reduce"] = dict(methods={"forward": (Reduce(), (rnd(3, 4, 5),))})
    f["ops_shapes"] = dict(methods={"forward": (Shapes(), (rnd(2, 3, 4), rnd(4, 4)))})
    f["ops_index"] = dict(methods={"forward": (Index(), (rnd(3, 5), torch.tensor([4, 0, 2]),
                                                         torch.tensor([[1, 2], [9, 0]])))})
    f["ops_conv_norm"] = dict(methods={"forward": (Conv1dNet(), (rnd(2, 4, 9), rnd(1, 3, 4, 5)))})
    # XNNPACK-lowered
    f["mlp_xnn"] = dict(methods={"forward": (MLP(), (rnd(4, 16),))}, xnn=True)
    f["small_cnn_xnn"] = dict(methods={"forward": (SmallCNN(), (rnd(2, 3, 16, 16),))}, xnn=True)
    f["act_cnn_xnn"] = dict(methods={"forward": (ActCNN(), (rnd(1, 3, 24, 24),))}, xnn=True)
    f["xnn_ops"] = dict(methods={"forward": (XnnOps(), (rnd(1, 4, 8, 8), rnd(1, 4, 8, 8)))}, xnn=True)
    f["half_xnn"] = dict(methods={"forward": (HalfXnn().half(), (rnd(1, 3, 20, 24, dtype=torch.float16),))}, xnn=True)
    f["conv_regimes_xnn"] = dict(methods={"forward": (ConvRegimes(), (rnd(2, 16, 12), rnd(1, 6, 9, 11), rnd(1, 1, 400),
                                                                       rnd(2, 1, 10, 12)))}, xnn=True)
    f["resblock1d_xnn"] = dict(methods={"forward": (ResBlock1d(), (rnd(2, 8, 100), rnd(1, 8, 3, 70), rnd(2, 8, 3, 37)))}, xnn=True)
    f["encoder_xnn"] = dict(methods={"forward": (Encoder(), (rnd(2, 6, 32),))}, xnn=True)
    f["mlp_dynamic_xnn"] = dict(methods={"forward": (MLP(), (rnd(3, 16),))}, xnn=True,
                                dynamic={"forward": ({0: Dim("batch", min=1, max=8)},)})
    f["qlinear_dyn_xnn"] = dict(methods={"forward": (QLinear(), (rnd(4, 32),))}, xnn=True, quant="dynamic")
    f["qcnn_static_xnn"] = dict(methods={"forward": (SmallCNN(), (rnd(2, 3, 16, 16),))}, xnn=True, quant="static")
    f["qact_cnn_static_xnn"] = dict(methods={"forward": (ActCNN(), (rnd(1, 3, 24, 24),))}, xnn=True, quant="static")
    # custom operators (their .out variants are what the program calls)
    f["custom_triple"] = dict(methods={"forward": (CustomTriple(), (rnd(3, 4),))}, custom=True)
    f["custom_lstm"] = dict(methods={"forward": (CustomLSTM(), (rnd(2, 5, 6), rnd(2, 8), rnd(2, 8)))}, custom=True)
    f["custom_pyop"] = dict(methods={"forward": (PyOp(), (rnd(3, 4), rnd(3, 4)))}, custom=True)
    f["mobilenet_v2_xnn"] = dict(methods={"forward": (MobileNetV2(), (rnd(1, 3, 224, 224),))}, xnn=True)
    # added later: appended so the fixtures above keep their seeded weights and inputs
    f["ops_conv3d"] = dict(methods={"forward": (Conv3dNet(), (rnd(1, 2, 4, 6, 6),))})
    f["ops_mask_index"] = dict(methods={"forward": (MaskIndex(), (rnd(4, 5), torch.rand(4, 5) > 0.5))})
    f["ops_quant_portable"] = dict(methods={"forward": (QuantPortable(), (rnd(3, 4, lo=-2, hi=2),))},
                                    quantized_out=True)
    f["ops_dtypes"] = dict(methods={"forward": (Dtypes(), (
        torch.randint(-100, 100, (3, 4), dtype=torch.int8), torch.randint(-100, 100, (3, 4), dtype=torch.int8),
        torch.randint(-3000, 3000, (3, 4), dtype=torch.int16), torch.randint(0, 256, (3, 4), dtype=torch.uint8),
        rnd(3, 4, dtype=torch.float64)))})
    f["ops_more_math"] = dict(methods={"forward": (MoreMath(), (rnd(3, 4), rnd(3, 4), torch.randint(-50, 50, (3, 4)),
                                                                torch.randint(-50, 50, (3, 4))))}, noncore=True)
    f["ops_more_reduce"] = dict(methods={"forward": (MoreReduce(), (rnd(3, 4, 5), torch.rand(3, 4) > 0.3))}, noncore=True)
    f["ops_more_shapes"] = dict(methods={"forward": (MoreShapes(), (rnd(3, 4, 5), rnd(1, 2, 5, 6), rnd(1, 2, 3, 4, 4),
                                                                    torch.randint(0, 5, (3, 4, 2))))}, noncore=True)
    f["ops_preserved"] = dict(methods={"forward": (Preserved(), (rnd(3, 4, 6), rnd(1, 2, 5, 6), rnd(1, 2, 3, 4, 4),
                                                                rnd(5, 6), torch.randint(-50, 50, (3, 4))))},
                              preserve=PRESERVED_OPS)
    f["encoder"] = dict(methods={"forward": (Encoder(), (rnd(2, 6, 32),))})  # portable transformer layer
    f["ops_quant_token"] = dict(methods={"forward": (QuantToken(), (rnd(2, 3, 8, lo=-3, hi=2),))}, quantized_out=True)
    f["qmlp_dyn_xnn"] = dict(methods={"forward": (QMLP(), (rnd(13, 100),))}, xnn=True, quant="dynamic")
    f["conv_inputs_xnn"] = dict(methods={"forward": (ConvInputs(), (rnd(1, 3, 19, 23), rnd(2, 4, 17, 12),
                                                                    rnd(2, 3, 10, 9), rnd(1, 3, 97, 97)))}, xnn=True)
    f["qadd_constant_xnn"] = dict(methods={"forward": (AddConstant(rnd(4, 4, 4)), (rnd(4, 4, 4),))}, xnn=True,
                                  quant="static")
    f["q8da4w_xnn"] = dict(methods={"forward": (Q4MLP(), (rnd(5, 64),))}, xnn=True, quant="8da4w")
    cl = lambda *shape: rnd(*shape).to(memory_format=torch.channels_last)  # noqa: E731
    f["channels_last"] = dict(methods={"forward": (ChannelsLast(), (cl(2, 3, 6, 7), rnd(3)))})
    f["channels_last_xnn"] = dict(methods={"forward": (ChannelsLast(), (cl(2, 3, 6, 7), rnd(3)))}, xnn=True)
    # state across calls: references for each of several successive calls (M:call{k}:in/out:i)
    f["kv_state"] = dict(methods={"forward": (KVState(), (rnd(1, 1, 4), torch.tensor([0])))},
                         calls=[(rnd(1, 1, 4), torch.tensor([p])) for p in (0, 3, 1, 5)])
    f["xnn_scalar_io"] = dict(methods={"forward": (ScalarIO(), (rnd(1).reshape(()), rnd(3, 4)))}, xnn=True)
    # weights in an external NAME.ptd file (portable program; XNNPACK delegate with tagged weights)
    f["mlp_external"] = dict(methods={"forward": (MLP(), (rnd(4, 16),))}, external=True)
    f["mlp_external_xnn"] = dict(methods={"forward": (MLP(), (rnd(4, 16),))}, xnn=True, external=True)
    add_issue14_fixtures(f)
    f["mask_ops"] = dict(methods={"forward": (MaskOps(), (torch.tensor([[[0.5, 1.0, -2.0, 0.5], [1.0, 2.0, -1.0, 0.0],
                                                                          [0.25, 0.5, 3.0, -0.5]]] * 2),
                                                         torch.randint(-5, 6, (2, 3, 4)), torch.rand(2, 3, 4) > 0.5))})
    f["input_views_xnn"] = dict(methods={"forward": (InputViews(), (rnd(1, 4, 6, 8), rnd(30), rnd(2, 15), rnd(2, 96)))}, xnn=True)
    f["qconv_chain_static_xnn"] = dict(methods={"forward": (ConvChainQ8(), (rnd(2, 3, 20, 20),))}, xnn=True,
                                       quant="static")
    f["qdw_block_static_xnn"] = dict(methods={"forward": (InvertedResidualQ8(), (rnd(2, 8, 14, 18),))}, xnn=True,
                                     quant="static")
    f["qfire_static_xnn"] = dict(methods={"forward": (FireQ8(), (rnd(2, 3, 21, 23),))}, xnn=True, quant="static")
    f["qregnet_block_static_xnn"] = dict(methods={"forward": (RegNetBlockQ8(), (rnd(2, 16, 14, 15),))}, xnn=True,
                                         quant="static")
    f["qshuffle_static_xnn"] = dict(methods={"forward": (ShuffleUnitQ8(), (rnd(2, 3, 34, 38),))}, xnn=True,
                                    quant="static")
    # the reference runtime's outputs too (M:runtime_out:i): dynamic int8 that must track it exactly
    f["qbert_dyn_xnn"] = dict(methods={"forward": (QBertBlocks(), (rnd(1, 48, 64),))}, xnn=True, quant="dynamic",
                              runtime_reference=True)
    # layer norms as the reference runtime computes them (ExecuTorch's optimized kernel, float32):
    # its bits, alone and between dynamic int8 linears (tests/test_layer_norm_fidelity.py)
    f["layer_norm_ref"] = dict(methods={"forward": (LayerNorms(), (
        rnd(2, 4, 768, lo=-2.0, hi=2.5), rnd(3, 300, lo=-1.0, hi=9.0), rnd(5, 100, lo=-20.0, hi=20.0),
        rnd(2, 260, lo=99.0, hi=101.0)))}, runtime_reference=True)
    f["qbert_ln_dyn_xnn"] = dict(methods={"forward": (QBertLNBlocks(), (rnd(1, 48, 64),))}, xnn=True,
                                 quant="dynamic", runtime_reference=True)
    # per-channel int4 weights (PT2E, weight_qmin -8 / weight_qmax 7: XNNPACK qcint4 filters, one
    # float32 scale a column) x dynamic int8 activations; the reference is the converted model in
    # eager, and the reference runtime's outputs (forward:runtime_out:0)
    f["qmlp_qc4w_xnn"] = dict(methods={"forward": (QC4MLP(), (rnd(2, 5, 64),))}, xnn=True, quant="qc4w",
                              runtime_reference=True)
    # the same filters x static int8 activations (qs8 x qcint4: the static int8 GEMM, the nibbles
    # widened to int8 at load)
    f["qmlp_qc4w_static_xnn"] = dict(methods={"forward": (QC4MLP(), (rnd(2, 5, 64),))}, xnn=True,
                                     quant="qc4w-static", runtime_reference=True)
    # 3x3 stride-1 convolutions on the Winograd F(2x2, 3x3) path (borders, batch, fusions)
    f["winograd_xnn"] = dict(methods={"forward": (WinogradConvs(), (rnd(2, 8, 17, 15),))}, xnn=True)
    # convolutions whose outer taps read only padding (dropped at load: lower_dead_taps)
    f["dead_taps_xnn"] = dict(methods={"forward": (DeadTaps(), (rnd(2, 8, 10, 10),))}, xnn=True)
    # 4-bit filters large enough for the weight arena (a decode step's M = 1, and M = 3)
    f["q8da4w_wide_xnn"] = dict(methods={"forward": (Q4Wide(), (rnd(3, 256),))}, xnn=True, quant="8da4w",
                                runtime_reference=True)
    # 1-D stride-1 convolutions on the Winograd F(3, 3) path (pieces of 3 taps, dilation, fusions)
    f["winograd1d_xnn"] = dict(methods={"forward": (Winograd1dConvs(), (rnd(1, 96, 520),))}, xnn=True)
    return f


def add_issue14_fixtures(f):
    """The operators of issue #14 item 2 (appended after every earlier fixture's seeded inputs)."""
    f["ops_views_extra"] = dict(methods={"forward": (opsm.Views(), (
        rnd(3, 4, 5), rnd(1, 8, 4, 6), torch.rand(3, 4, 5) > 0.5, rnd(3, 4, 5)[:, :2].contiguous(),
        torch.tensor([1, 0, 3, 2, 3])))}, preserve=opsm.VIEWS_PRESERVE)
    f["ops_math_extra"] = dict(methods={"forward": (opsm.MathExtra(), (
        torch.rand(3, 4) * 0.98 + 0.01, torch.randint(-1000, 1000, (3, 4)), rnd(2, 3, 5)))},
        preserve=opsm.MATH_PRESERVE, edge_pass=opsm.stateful_batch_norm)
    f["ops_sampling"] = dict(methods={"forward": (opsm.Sampling(), (
        rnd(2, 5, 3), rnd(2, 4, 3), rnd(1, 2, 6, 7), rnd(1, 4, 5, 2, lo=-1.2, hi=1.2)))}, preserve=opsm.SAMPLING_PRESERVE)
    f["ops_backward"] = dict(methods={"forward": (opsm.Backward(), (
        rnd(2, 4, 3, 4), rnd(2, 2, 5, 6), rnd(4, 1, 3, 2), rnd(1, 3, 6), rnd(1, 2, 6), rnd(3, 2, 3), rnd(1, 2, 7, 6)))})
    f["ops_fft"] = dict(methods={"forward": (opsm.Fft(), (rnd(2, 8), rnd(2, 4, 6)))}, noncore=True)
    f["ops_quant_embed"] = dict(methods={"forward": (opsm.QuantEmbed(), (
        torch.tensor([[1, 0, 9], [3, 3, 5]]), rnd(3, 8), torch.randint(0, 256, (2, 5), dtype=torch.uint8),
        torch.randint(0, 256, (2, 5), dtype=torch.uint8)))}, setup=opsm.define_extra_quant_ops)
    f["ops_scalar_prims"] = dict(methods={"forward": (opsm.ScalarPrims(), (rnd(7, 3), rnd(4, 3), torch.tensor(3)))},
                                 dynamic={"forward": ({0: Dim("a", min=6, max=9)}, {0: Dim("b", min=2, max=9)}, None)},
                                 noncore=True)
    f["ops_map_loop"] = dict(methods={"forward": (opsm.MapLoop(), (rnd(3, 4), rnd(4)))}, noncore=True)
    f["ops_empty"] = dict(methods={"forward": (opsm.EmptyFill(), (rnd(3, 4),))})
    f["ops_empty_aten"] = dict(methods={"forward": (opsm.EmptyFill(), (rnd(3, 4),))}, skip_dim_order=True)
    # checked by tests/test_ops_state.py: successive calls of one loaded method, and random statistics
    f["ops_kv_state"] = dict(methods={"forward": (opsm.KvCache(), (rnd(2, 3), torch.tensor(2)))}, reinplace=True,
                             calls=[(rnd(2, 3), torch.tensor(k)) for k in (2, 5, 2)])
    f["ops_random"] = dict(methods={"forward": (opsm.Random(), (rnd(50, 40),))}, no_reference=True)
    # a static-int8 depthwise convolution reading a fused SiLU chain's float32 output (tests/test_xnn_fusion.py:
    # bit-identical with fusion on and off; the reference runtime's outputs too). Seed 3: of seeds
    # 0-11, the weights and input on which a float32 depthwise kernel's rounded sums move outputs
    # (6 of them) off the integer sums' - what the test must be able to see.
    torch.manual_seed(3)
    f["qsilu_dw_static_xnn"] = dict(methods={"forward": (SiluDepthwiseQ8(), (rnd(1, 8, 40, 40),))}, xnn=True,
                                    quant="static", runtime_reference=True)
    # static int8 bit for bit as the reference runtime computes it (tests/test_q8s_fidelity.py)
    f["qref_static_xnn"] = dict(methods={"forward": (ReferenceQ8(), (rnd(2, 3, 32, 32),))}, xnn=True, quant="static",
                                runtime_reference=True)


def quantize(model, inputs, dynamic, weight_bits=8):
    """pt2e quantisation with the XNNPACK quantizer: per-channel int8 (weight_bits 4: int4, in
    [-8, 7]) weights, int8 activations (dynamic: per-row at run time; static: calibrated on `inputs`)."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    wq = dict(weight_qmin=-8, weight_qmax=7) if weight_bits == 4 else {}
    q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic, **wq))
    m = export(model, inputs).module()
    m = prepare_pt2e(m, q)
    m(*inputs)
    return convert_pt2e(m)


def to_numpy(t):
    """numpy has no bfloat16: store it as its uint16 bit pattern (what the runtime accepts)."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def export_one(name, spec, outdir):
    progs, ref = {}, {}
    if spec.get("setup"):
        spec["setup"]()
    for mname, (model, inputs) in spec["methods"].items():
        model = model.eval()
        for p in model.parameters():  # non-trivial batchnorm statistics
            p.requires_grad_(False)
        for mod in model.modules():
            if isinstance(mod, (nn.BatchNorm2d,)):
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
        if spec.get("calls"):  # a stateful model: successive eager calls on a copy, from its initial state
            eager = copy.deepcopy(model)
            for k, call in enumerate(spec["calls"]):
                with torch.no_grad():
                    couts = eager(*call)
                for i, t in enumerate(call):
                    ref[f"{mname}:call{k}:in:{i}"] = to_numpy(t)
                for i, t in enumerate(couts if isinstance(couts, tuple) else (couts,)):
                    ref[f"{mname}:call{k}:out:{i}"] = to_numpy(t.clone())
        if spec.get("quant") == "8da4w":  # the reference is the quantized model in eager mode
            model = quantize_8da4w(model)
        if spec.get("quant") in ("qc4w", "qc4w-static"):  # (the same: the converted model in eager mode)
            model = quantize(model, inputs, dynamic=spec["quant"] == "qc4w", weight_bits=4)
        with torch.no_grad():
            outs = copy.deepcopy(model)(*inputs) if spec.get("calls") else model(*inputs)
        if spec.get("quant") in ("static", "dynamic"):
            model = quantize(model, inputs, dynamic=spec["quant"] == "dynamic")
        dyn = spec.get("dynamic", {}).get(mname)
        progs[mname] = export(model, inputs, dynamic_shapes=dyn)
        if spec.get("external") and spec.get("xnn"):  # delegate weights go to the .ptd too
            from executorch.exir.passes.external_constants_pass import delegate_external_constants_pass_unlifted
            unlifted = progs[mname].module()
            delegate_external_constants_pass_unlifted(unlifted, gen_tag_fn=lambda node: name)
            progs[mname] = export(unlifted, inputs, dynamic_shapes=dyn)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for i, t in enumerate(inputs):
            ref[f"{mname}:in:{i}"] = to_numpy(t)
        for i, t in enumerate(outs):
            if not spec.get("no_reference"):
                ref[f"{mname}:out:{i}"] = to_numpy(t)
    part = []
    if spec.get("xnn"):
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        part = [XnnpackPartitioner()]
    kw = {}
    if spec.get("quantized_out"):
        define_quantized_out_variants()
    if spec.get("custom") or spec.get("noncore") or spec.get("preserve") or spec.get("skip_dim_order"):
        from executorch.exir import EdgeCompileConfig  # custom and non-core ATen ops
        keep = []
        for op_name in spec.get("preserve", []):
            base, ov = op_name.split(".")
            keep.append(getattr(getattr(torch.ops.aten, base), ov))
        kw["compile_config"] = EdgeCompileConfig(_check_ir_validity=False, preserve_ops=keep,
                                                 _skip_dim_order=bool(spec.get("skip_dim_order")))
    edge = to_edge_transform_and_lower(progs if len(progs) > 1 else next(iter(progs.values())),
                                       partitioner=part, **kw)
    if spec.get("edge_pass"):
        spec["edge_pass"](edge)
    from executorch.exir import ExecutorchBackendConfig
    config = ExecutorchBackendConfig(run_reinplace_pass=bool(spec.get("reinplace")),
                                     external_constants=bool(spec.get("external")))
    et = edge.to_executorch(config)
    if spec.get("external"):  # weights in NAME.ptd (external_constants=True)
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            et.write_tensor_data_to_file(tmp)
            (ptd,) = os.listdir(tmp)
            os.replace(os.path.join(tmp, ptd), os.path.join(outdir, name + ".ptd"))
    with open(os.path.join(outdir, name + ".pte"), "wb") as fh:
        fh.write(et.buffer)
    np.savez(os.path.join(outdir, name + ".npz"), **ref)
    if spec.get("runtime_reference"):
        runtime_reference(os.path.join(outdir, name + ".pte"), os.path.join(outdir, name + ".npz"), list(progs))
    print(f"{name}: {len(et.buffer)} bytes, methods {list(progs)}")


REF_PYTHON = os.environ.get("ETNP_REF_PYTHON", "/work/envs/ref-venv/bin/python")
# Runs in the reference runtime's env (the published wheel: upstream ExecuTorch 1.3.1 + XNNPACK):
# each method on the fixture's inputs. argv: pte, npz in, npz out, method names.
REF_SCRIPT = r"""
import sys, numpy as np, executorch_numpy_runtime as en
pte, src, dst = sys.argv[1:4]
d = dict(np.load(src))
prog = en.Runtime.get().load_program(pte)
res = {}
for m in sys.argv[4:]:
    n = sum(1 for k in d if k.startswith(m + ":in:"))
    for i, o in enumerate(prog.load_method(m)([d[f"{m}:in:{j}"] for j in range(n)])):
        res[f"{m}:runtime_out:{i}"] = np.asarray(o)
np.savez(dst, **res)
"""


def runtime_reference(pte, npz, methods):
    """The reference runtime's outputs on the fixture's inputs, merged into its npz as
    M:runtime_out:i (tests compare with them where ours must give the published runtime's bits)."""
    import subprocess
    import tempfile
    if not os.path.exists(REF_PYTHON):
        raise SystemExit(f"no reference runtime at {REF_PYTHON} (set ETNP_REF_PYTHON)")
    pte, npz = os.path.abspath(pte), os.path.abspath(npz)
    out = npz + ".ref.npz"
    # run away from the repository: this project's own package would shadow the reference one
    with tempfile.TemporaryDirectory() as away:
        r = subprocess.run([REF_PYTHON, "-c", REF_SCRIPT, pte, npz, out] + methods, cwd=away,
                           capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"reference runtime failed on {pte}:\n{r.stderr[-3000:]}")
    merged = dict(np.load(npz))
    merged.update(np.load(out))
    os.remove(out)
    np.savez(npz, **merged)


def main(argv):
    define_custom_ops()
    outdir = argv[1] if len(argv) > 1 else "tests/models"
    only = set(argv[2:])
    os.makedirs(outdir, exist_ok=True)
    for name, spec in fixtures().items():
        if only and name not in only:
            continue
        try:
            export_one(name, spec, outdir)
        except Exception as e:  # keep going; report which fixture failed
            print(f"{name}: FAILED {type(e).__name__}: {e}", file=sys.stderr)
            if os.environ.get("EXPORT_STRICT"):
                raise


if __name__ == "__main__":
    main(sys.argv)
