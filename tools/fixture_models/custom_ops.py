"""Custom operators of the fixtures, defined through torch.library: etnp::triple, etnp::lstm,
mylib::scaled_add (define_custom_ops) and the .out variants of the quantized_decomposed ops
(define_quantized_out_variants), with the models that call them.

Export environment only (torch + executorch): imported by tools/export_fixtures.py.
"""
from __future__ import annotations

import torch
import torch.nn as nn


_LIBS = []


# The .out schemas ExecuTorch's quantized kernel library declares (executorch/kernels/quantized/
# quantized.yaml). Its own registration library cannot be loaded beside torch 2.13.0 (ABI), so the
# exporter declares them itself, each implemented by torch's functional kernel.
_QUANT_OUT = {
    "quantize_per_tensor.out": ("Tensor input, float scale, int zero_point, int quant_min, int quant_max, "
                                "ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)", "quantize_per_tensor.default"),
    "quantize_per_tensor.Tensor_out": ("Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, "
                                       "ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)", "quantize_per_tensor.tensor"),
    "dequantize_per_tensor.out": ("Tensor input, float scale, int zero_point, int quant_min, int quant_max, "
                                  "ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)",
                                  "dequantize_per_tensor.default"),
    "dequantize_per_tensor.Tensor_out": ("Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, "
                                         "ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)",
                                         "dequantize_per_tensor.tensor"),
    "quantize_per_channel.out": ("Tensor input, Tensor scales, Tensor zero_points, int axis, int quant_min, "
                                 "int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
                                 "quantize_per_channel.default"),
    "dequantize_per_channel.out": ("Tensor input, Tensor scales, Tensor? zero_points, int axis, int quant_min, "
                                   "int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out) "
                                   "-> Tensor(a!)", "dequantize_per_channel.default"),
    "choose_qparams.Tensor_out": ("Tensor input, int quant_min, int quant_max, float eps, ScalarType dtype, *, "
                                  "Tensor(a!) scale_out, Tensor(b!) zero_point_out) -> (Tensor(a!), Tensor(b!))",
                                  "choose_qparams.tensor"),
    "choose_qparams_per_token_asymmetric.out": ("Tensor input, ScalarType dtype, *, Tensor(a!) scale_out, "
                                                "Tensor(b!) zero_point_out) -> (Tensor(a!), Tensor(b!))",
                                                "choose_qparams_per_token_asymmetric.default"),
    "quantize_per_token.out": ("Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, "
                               "ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)", "quantize_per_token.default"),
    "dequantize_per_token.out": ("Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, "
                                 "ScalarType dtype, ScalarType output_dtype, *, Tensor(a!) out) -> Tensor(a!)",
                                 "dequantize_per_token.default"),
}


def define_quantized_out_variants():
    if getattr(define_quantized_out_variants, "done", False):
        return
    from torch.ao.quantization.fx import _decomposed  # noqa: F401  (the functional ops)

    lib = torch.library.Library("quantized_decomposed", "FRAGMENT")
    for name, (args, functional) in _QUANT_OUT.items():
        lib.define(f"{name}({args}")
        base, ov = functional.split(".")
        fn = getattr(getattr(torch.ops.quantized_decomposed, base), ov)

        def impl(*a, _fn=fn, _two=name.startswith("choose"), **kw):
            outs = [kw.pop(k) for k in ("out", "scale_out", "zero_point_out") if k in kw]
            kw.pop("out_dtype", None)
            r = _fn(*a, **kw)
            if _two:
                outs[0].copy_(r[0])
                outs[1].copy_(r[1])
                return tuple(outs)
            return outs[0].copy_(r)

        lib.impl(name, impl, "CompositeExplicitAutograd")
    _LIBS.append(lib)
    define_quantized_out_variants.done = True


def define_custom_ops():
    """etnp::triple, etnp::lstm (bundled native kernels) and mylib::scaled_add (implemented in
    Python by the tests through en.register_op), each with the .out variant the exporter uses."""
    lib = torch.library.Library("etnp", "DEF")
    lib.define("triple(Tensor x) -> Tensor")
    lib.define("triple.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
    lib.impl("triple", lambda x: x * 3, "CompositeExplicitAutograd")
    lib.impl("triple.out", lambda x, out: out.copy_(x * 3), "CompositeExplicitAutograd")
    lib.define("lstm(Tensor x, Tensor h0, Tensor c0, Tensor w_ih, Tensor w_hh, Tensor b_ih, Tensor b_hh)"
               " -> (Tensor, Tensor, Tensor)")
    lib.define("lstm.out(Tensor x, Tensor h0, Tensor c0, Tensor w_ih, Tensor w_hh, Tensor b_ih, Tensor b_hh, *,"
               " Tensor(a!) out, Tensor(b!) h_n, Tensor(c!) c_n) -> (Tensor(a!), Tensor(b!), Tensor(c!))")

    def lstm_ref(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        y, h, c = torch._VF.lstm(x, (h0.unsqueeze(0), c0.unsqueeze(0)), (w_ih, w_hh, b_ih, b_hh),
                                   True, 1, 0.0, False, False, True)
        return y, h.squeeze(0), c.squeeze(0)

    def lstm_out(x, h0, c0, w_ih, w_hh, b_ih, b_hh, *, out, h_n, c_n):
        y, h, c = lstm_ref(x, h0, c0, w_ih, w_hh, b_ih, b_hh)
        out.copy_(y), h_n.copy_(h), c_n.copy_(c)
        return out, h_n, c_n

    lib.impl("lstm", lstm_ref, "CompositeExplicitAutograd")
    lib.impl("lstm.out", lstm_out, "CompositeExplicitAutograd")
    my = torch.library.Library("mylib", "DEF")
    my.define("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor")
    my.define("scaled_add.out(Tensor a, Tensor b, float alpha, *, Tensor(a!) out) -> Tensor(a!)")
    my.impl("scaled_add", lambda a, b, alpha: a + alpha * b, "CompositeExplicitAutograd")
    my.impl("scaled_add.out", lambda a, b, alpha, out: out.copy_(a + alpha * b), "CompositeExplicitAutograd")
    _LIBS.extend([lib, my])


class CustomTriple(nn.Module):
    def forward(self, x):
        return torch.ops.etnp.triple(x) + 1


class CustomLSTM(nn.Module):
    """torch.nn.LSTM's weights, run through etnp::lstm (reference: torch.nn.LSTM itself)."""

    def __init__(self):
        super().__init__()
        self.ref = nn.LSTM(6, 8, batch_first=True)

    def forward(self, x, h0, c0):
        r = self.ref
        if not torch.compiler.is_exporting():
            y, (h, c) = r(x, (h0.unsqueeze(0), c0.unsqueeze(0)))
            return y, h.squeeze(0), c.squeeze(0)
        return torch.ops.etnp.lstm(x, h0, c0, r.weight_ih_l0, r.weight_hh_l0, r.bias_ih_l0, r.bias_hh_l0)


class PyOp(nn.Module):
    def forward(self, a, b):
        return torch.relu(torch.ops.mylib.scaled_add(a, b, 0.5))
