#!/usr/bin/env python3
"""Export the .pte test fixtures and their torch-eager references.

Runs ONLY in a separate environment with torch==2.13.0 and executorch==1.3.1
(see ../shared/spec/oracle-env.md); the runtime and its tests never import torch.

    /path/to/export-venv/bin/python tools/export_fixtures.py tests/models [NAME ...]

For every fixture NAME it writes tests/models/NAME.pte and tests/models/NAME.npz.
The .npz holds, for each method M, the seeded inputs ``M:in:i`` and the eager
outputs ``M:out:i`` (torch eager, computed on the same inputs).
"""
from __future__ import annotations

import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim, export

from executorch.exir import to_edge_transform_and_lower

import ops_fixture_models as opsm  # models of the issue #14 operator fixtures (same folder)

SEED = 1234


def rnd(*shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    return (torch.rand(*shape) * (hi - lo) + lo).to(dtype)


# --------------------------------------------------------------------- models
class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2, 2)
        x = F.hardtanh(self.bn2(self.conv2(x)), -0.5, 3.0)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.softmax(self.fc(x), dim=-1)


class ActCNN(nn.Module):
    """Convolutions followed by elementwise activations, as EfficientNet / MobileNetV3 have them: the
    delegate hands such a chain (SiLU = Sigmoid + Multiply, Hardswish, GELU) to the convolution,
    which runs it on its output rows as it finishes them (1x1, 3x3, depthwise; a residual add
    in between; a grouped convolution and an output read twice, which keep the plain path)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=1, padding=1)
        self.pw = nn.Conv2d(16, 24, 1)
        self.dw = nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.proj = nn.Conv2d(24, 16, 1)
        self.grouped = nn.Conv2d(16, 16, 3, padding=1, groups=4)
        self.last = nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x):
        x = F.silu(self.stem(x))                      # 3x3 conv + SiLU
        y = F.hardswish(self.pw(x))                   # pointwise conv + Hardswish
        y = F.silu(self.dw(y))                        # depthwise + SiLU
        x = F.gelu(self.proj(y) + x)                  # residual add, then GELU
        g = self.grouped(x)
        x = F.silu(g) + g                             # grouped conv: plain path; its output read twice
        return torch.sigmoid(self.last(x))


class ConvInputs(nn.Module):
    """Convolutions reading network inputs (NCHW) with assorted windows: the delegate reads such
    inputs in place (large images: c, d) or through a padded copy (small padded ones: a, b);
    borders (padding, odd sizes, dilation) are where the paths differ."""
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 5, padding=2)
        self.b = nn.Conv2d(4, 16, 3, stride=2, padding=2, dilation=2)
        self.c = nn.Conv2d(3, 8, 3)
        self.d = nn.Conv2d(3, 24, 3, stride=2, padding=1)

    def forward(self, w, x, y, z):
        return torch.relu(self.a(w)), self.b(x), self.c(y), torch.clamp(self.d(z), -0.5, 0.5)


class IntBool(nn.Module):
    def forward(self, x, mask):
        y = torch.where(mask, x * 3, x - 7)
        return y, y > 4, (x == 2), y.sum(dim=1)


class Half(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 6)

    def forward(self, x):
        return torch.sigmoid(self.fc(x)) * 2.0


class Conv1dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(4, 6, 3, padding=2, dilation=2)
        self.ct = nn.ConvTranspose2d(3, 5, 3, stride=2, padding=1, output_padding=1)
        self.ln = nn.LayerNorm(6)
        self.gn = nn.GroupNorm(1, 5)

    def forward(self, x, z):
        y = self.ln(self.c(x).transpose(1, 2))
        w = self.gn(self.ct(z))
        return F.log_softmax(y, dim=-1), F.avg_pool2d(w, 2), F.interpolate(z, scale_factor=2, mode="nearest"), \
            F.interpolate(z, size=(5, 7), mode="bilinear", align_corners=False)


class Unary(nn.Module):
    def forward(self, x):
        p = x.abs() + 0.1
        return (torch.exp(x), torch.log(p), torch.sqrt(p), torch.rsqrt(p), torch.sin(x), torch.cos(x),
                torch.tanh(x), torch.erf(x), -x, F.gelu(x), F.silu(x), F.hardswish(x), F.hardsigmoid(x),
                F.leaky_relu(x, 0.1), F.elu(x), F.softplus(x), torch.floor(x * 3), torch.ceil(x * 3),
                torch.round(x * 3), torch.sigmoid(x), torch.reciprocal(p), torch.log1p(p), torch.expm1(x),
                torch.atan(x), torch.asin(x * 0.9), torch.acos(x * 0.9), torch.sign(x), torch.trunc(x * 3),
                torch.clamp(x, -0.3, 0.4), torch.relu(x))


class Binary(nn.Module):
    def forward(self, x, y, i, j):
        return (torch.pow(x.abs() + 0.5, y), torch.remainder(x * 5, y + 2), torch.fmod(x * 5, y + 2),
                torch.maximum(x, y), torch.minimum(x, y), torch.where(x > y, x, y), x >= y, x != y, x < 0.2,
                torch.logical_and(x > 0, y > 0), torch.logical_or(x > 0, y > 0), torch.logical_not(x > 0),
                torch.bitwise_and(i, j), torch.bitwise_or(i, j), torch.bitwise_xor(i, j), i // (j.abs() + 1),
                torch.remainder(i, j.abs() + 1), x - y * 2, x / (y.abs() + 1), x * 3.5, x + 2, x ** 2,
                torch.atan2(x, y), i * 3, i + j, x.masked_fill(x > 0.5, -1.0))


class Reduce(nn.Module):
    def forward(self, x):
        return (x.sum(), x.sum(dim=1), x.mean(dim=(0, 2), keepdim=True), x.amax(dim=-1), x.amin(dim=0),
                x.max(dim=1)[0], x.max(dim=1)[1], x.argmax(dim=2), x.argmin(dim=1), (x > 0).any(dim=1),
                (x > -0.9).all(dim=2), x.prod(dim=2), x.var(dim=1), x.std(dim=2, keepdim=True),
                torch.cumsum(x, dim=1), x.var(dim=1, unbiased=False), x.mean())


class Shapes(nn.Module):
    def forward(self, x, y):
        a, b = torch.split(x, [1, 2], dim=1)
        parts = torch.unbind(y, dim=0)
        return (torch.cat([x, x * 2], dim=1), torch.stack([y, y + 1], dim=1), a, b, parts[1],
                x.permute(2, 0, 1), x.repeat(1, 2, 1), torch.tril(y), torch.triu(y, 1),
                F.pad(x, (1, 2), value=0.5), x.reshape(2, -1), x.unsqueeze(1), x[:, 1], x[:, :, 1:3],
                x.flip(0), y.t(), y.expand(2, 4, 4), torch.arange(6, dtype=torch.float32) * 0.5,
                torch.zeros_like(y) + torch.ones(4, 4), torch.full((2, 2), 3.0),
                F.pad(x, (2, 1), mode="reflect"), F.pad(x, (1, 2), mode="replicate"),
                x.transpose(0, 2).contiguous(), torch.roll(y, 1, 0))


class Index(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, x, idx, tok):
        return (torch.index_select(x, 1, idx), torch.gather(x, 1, idx.view(1, -1).expand(3, -1)),
                self.emb(tok), x[idx[1:]], x[:, idx], torch.topk(x, 2, dim=1)[0], torch.topk(x, 2, dim=1)[1],
                torch.sort(x, dim=1, descending=True)[0], torch.sort(x, dim=0)[1],
                x.index_put((idx[1:],), torch.ones(2, 5)), torch.scatter(x, 1, idx.view(1, -1).expand(3, -1), 0.0),
                x.narrow(1, 1, 3), torch.bmm(x.unsqueeze(0), x.t().unsqueeze(0)), x @ x.t())


class MultiMethodA(nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0


class MultiMethodB(nn.Module):
    def forward(self, x, y):
        return torch.matmul(x, y), x.mean()


class MobileNetV2(nn.Module):
    """MobileNetV2 (width 1.0) written out by hand; random seeded weights."""

    def __init__(self, num_classes=1000):
        super().__init__()

        def cbr(i, o, k, s, g=1):
            return nn.Sequential(nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(o),
                                 nn.ReLU6())

        class Inv(nn.Module):
            def __init__(self, i, o, s, t):
                super().__init__()
                h = i * t
                layers = [] if t == 1 else [cbr(i, h, 1, 1)]
                layers += [cbr(h, h, 3, s, h), nn.Conv2d(h, o, 1, bias=False), nn.BatchNorm2d(o)]
                self.conv = nn.Sequential(*layers)
                self.res = s == 1 and i == o

            def forward(self, x):
                return x + self.conv(x) if self.res else self.conv(x)

        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
               (6, 320, 1, 1)]
        feats = [cbr(3, 32, 3, 2)]
        c = 32
        for t, o, n, s in cfg:
            for k in range(n):
                feats.append(Inv(c, o, s if k == 0 else 1, t))
                c = o
        feats.append(cbr(c, 1280, 1, 1))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                batch_first=True)

    def forward(self, x):
        return self.layer(x)


class XnnOps(nn.Module):
    """A spread of ops the XNNPACK partitioner lowers."""

    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.ct = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1)
        self.prelu = nn.PReLU(4)

    def forward(self, x, y):
        a = torch.sigmoid(x) + torch.tanh(y) - x * y / (y.abs() + 1.0)
        b = torch.maximum(F.elu(a), F.leaky_relu(a, 0.2)) + torch.minimum(F.hardswish(a), a.abs())
        c = torch.sqrt(b.abs() + 1) + torch.floor(b) + torch.ceil(b) - torch.neg(b) * b
        d = self.prelu(self.dw(c))
        e = F.max_pool2d(d, 2, 2) + F.avg_pool2d(d, 2, 2)
        f = torch.cat([e, e * 2.0], dim=1)[:, 2:6]
        g = F.interpolate(f, scale_factor=2, mode="bilinear", align_corners=False)
        h = F.pad(g, (1, 1, 1, 1), value=0.25)
        u = self.ct(d)
        return torch.softmax(h.mean(dim=(2, 3)), dim=-1), u.permute(0, 2, 3, 1).reshape(1, -1, 3), \
            torch.exp(-c.square()), torch.rsqrt(c.abs() + 1), F.gelu(c), torch.log(c.abs() + 1)


class ConvRegimes(nn.Module):
    """Convolution regimes the zoo never had (issue #34), XNNPACK-lowered: transposed convolutions
    1-D and 2-D (strides above and below the kernel, padding, output padding, dilation, groups),
    depthwise convolutions with channel multipliers 2 and 3 (strided), and convolutions of one
    input channel (an STFT-like Conv1d(1, C, k, stride), wav2vec2's first layer, a grayscale stem)."""

    def __init__(self):
        super().__init__()
        self.t1 = nn.ConvTranspose1d(16, 8, 16, stride=8, padding=4)
        self.t2 = nn.ConvTranspose2d(6, 4, 4, stride=2, padding=1)
        self.t3 = nn.ConvTranspose2d(6, 4, 2, stride=3, output_padding=1)  # stride > kernel: phases without taps
        self.t4 = nn.ConvTranspose2d(6, 4, 3, stride=2, padding=2, output_padding=1, dilation=2, groups=2)
        self.t5 = nn.ConvTranspose2d(6, 4, 3, stride=1, padding=1)  # stride 1: a convolution, taps reversed
        self.t6 = nn.ConvTranspose1d(16, 8, 3, stride=1, padding=3, dilation=2, groups=2)
        self.m2 = nn.Conv2d(6, 12, 3, padding=1, groups=6)
        self.m3 = nn.Conv2d(6, 18, 5, stride=2, padding=2, groups=6)
        self.s1 = nn.Conv1d(1, 40, 32, stride=16)
        self.s2 = nn.Conv1d(1, 24, 10, stride=5, bias=False)
        self.s3 = nn.Conv2d(1, 8, 3, padding=1)

    def forward(self, a, x, w, im):
        return (self.t1(a), self.t2(x), self.t3(x), torch.relu(self.t4(x)), self.m2(x), self.m3(x),
                self.s1(w), F.gelu(self.s2(w)), self.s3(im), self.t5(x), self.t6(a))


class ResBlock1d(nn.Module):
    """1-D convolutions between NCHW-layout nodes, as in a HiFi-GAN vocoder's residual blocks
    (XNNPACK-lowered): each Conv1d's transpose back to NCHW, the LeakyReLU after it, the residual
    add and the LeakyReLU of the residual sum fuse into the convolution (xnn_fuse.cpp); a transposed
    convolution, a Tanh after a convolution, one LeakyReLU computed twice, a length that leaves ragged
    tiles, convolutions the direct kernel does not take (4 output channels) and 2-D ones of one kernel row."""

    def __init__(self):
        super().__init__()
        self.pre = nn.Conv1d(8, 16, 7, padding=3)
        self.c1 = nn.ModuleList([nn.Conv1d(16, 16, 3, padding=d, dilation=d) for d in (1, 3)])
        self.c2 = nn.ModuleList([nn.Conv1d(16, 16, 3, padding=1) for _ in (1, 3)])
        self.up = nn.ConvTranspose1d(16, 8, 8, stride=4, padding=2)
        self.c3 = nn.Conv1d(8, 8, 5, padding=2)
        self.c4 = nn.Conv1d(8, 8, 3, padding=1)
        self.post = nn.Conv1d(8, 4, 7, padding=3)
        self.im = nn.Conv2d(8, 8, (1, 3), padding=(0, 1))
        self.im2 = nn.Conv2d(8, 16, (1, 5), padding=(0, 4), dilation=(1, 2))  # its result NCHW: written so

    def forward(self, x, im, im2):
        h = self.pre(x)
        for a, b in zip(self.c1, self.c2):
            r = h
            h = F.leaky_relu(h, 0.1)
            h = b(F.leaky_relu(a(h), 0.1)) + r
        u = self.up(F.leaky_relu(h, 0.1))
        h = (torch.tanh(self.c3(F.leaky_relu(u, 0.1))) + self.c4(F.leaky_relu(u, 0.1))) + u  # (one LeakyReLU twice)
        return self.post(F.leaky_relu(h)), h, F.leaky_relu(self.im(im), 0.2), self.im2(im2)


class HalfXnn(nn.Module):
    """An fp16 program lowered to XNNPACK (model.half()): convolutions, a depthwise one, hardswish,
    residual add, global pooling, linear - every node's output rounded to fp16 in the delegate."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 16, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        y = F.hardswish(self.c1(x))
        y = y + self.pw(F.relu(self.dw(y)))
        return self.fc(y.mean(dim=(2, 3))), torch.sigmoid(y) * 3.0


class QLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 16)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class QMLP(nn.Module):
    """A wider MLP for the int8 GEMM (qd8 x qc8w): K and N in the hundreds, a ragged K (100)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(100, 512)
        self.fc2 = nn.Linear(512, 384)
        self.fc3 = nn.Linear(384, 40)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class QBertBlocks(nn.Module):
    """BERT-like encoder blocks for dynamic int8 (qd8 x qc8w) linears, with the float XNNPACK
    operations between them whose bits the next dynamic quantization reads: attention (batch
    matmuls, softmax), residual adds, GELU. No layer norm (it runs as a portable kernel, outside
    the delegate; QBertLNBlocks has them). Hidden 64, 4 heads, FFN 256."""

    def __init__(self, layers=3, hidden=64, heads=4, ffn=256):
        super().__init__()
        self.heads = heads
        self.qkv = nn.ModuleList(nn.Linear(hidden, 3 * hidden) for _ in range(layers))
        self.out = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.up = nn.ModuleList(nn.Linear(hidden, ffn) for _ in range(layers))
        self.down = nn.ModuleList(nn.Linear(ffn, hidden) for _ in range(layers))

    def forward(self, x):
        b, s, h = x.shape
        for qkv, out, up, down in zip(self.qkv, self.out, self.up, self.down):
            q, k, v = qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, h)
            x = x + out(a)
            x = x + down(F.gelu(up(x)))
        return x



class QBertLNBlocks(QBertBlocks):
    """QBertBlocks as BERT has them: a LayerNorm (eps 1e-12) after each residual add (post-LN), so
    every dynamic quantization after the first reads a portable layer norm's bits."""

    def __init__(self, layers=2, hidden=64, heads=4, ffn=256):
        super().__init__(layers, hidden, heads, ffn)
        self.ln1 = nn.ModuleList(nn.LayerNorm(hidden, eps=1e-12) for _ in range(layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(hidden, eps=1e-12) for _ in range(layers))
        with torch.no_grad():
            for ln in list(self.ln1) + list(self.ln2):
                ln.weight.uniform_(0.5, 1.5)
                ln.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        b, s, h = x.shape
        for qkv, out, up, down, ln1, ln2 in zip(self.qkv, self.out, self.up, self.down, self.ln1, self.ln2):
            q, k, v = qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, h)
            x = ln1(x + out(a))
            x = ln2(x + down(F.gelu(up(x))))
        return x


class LayerNorms(nn.Module):
    """Layer norms of the widths ExecuTorch's optimized kernel treats differently: 768 and 300
    (cascaded 8-lane Welford; 300 with a 4-element tail), 100 (its N < 256 scalar path), 260
    without weight and bias."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.LayerNorm(768, eps=1e-12), nn.LayerNorm(300), nn.LayerNorm(100)
        self.d = nn.LayerNorm(260, elementwise_affine=False)
        with torch.no_grad():
            for ln in (self.a, self.b, self.c):
                ln.weight.uniform_(0.5, 1.5)
                ln.bias.uniform_(-0.2, 0.2)

    def forward(self, x768, x300, x100, x260):
        return self.a(x768), self.b(x300), self.c(x100), self.d(x260)


# ------------------------------------------------------------------ custom ops
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


class Conv3dNet(nn.Module):
    """3-D convolutions: strided, grouped+dilated, transposed."""
    def __init__(self):
        super().__init__()
        self.a = nn.Conv3d(2, 4, 3, stride=(1, 2, 2), padding=1)
        self.b = nn.Conv3d(4, 4, (2, 3, 3), groups=2, dilation=(1, 2, 1), padding=(0, 2, 1))
        self.t = nn.ConvTranspose3d(4, 3, 2, stride=2)

    def forward(self, x):
        y = torch.relu(self.a(x))
        z = self.b(y)
        return y, z, self.t(z)


class MaskIndex(nn.Module):
    """Data-dependent output sizes: boolean-mask indexing and nonzero."""
    def forward(self, x, m):
        return x[m], torch.nonzero(m), x[x > 0.25]


class QuantPortable(nn.Module):
    """quantized_decomposed ops on the portable path (no delegate), checked by torch's own kernels."""
    def __init__(self):
        super().__init__()
        self.register_buffer("scales", torch.tensor([0.02, 0.05, 0.1, 0.01]))
        self.register_buffer("zps", torch.tensor([0, 3, -5, 10], dtype=torch.int64))

    def forward(self, x):
        qd = torch.ops.quantized_decomposed
        q8 = qd.quantize_per_tensor(x, 0.03, 2, -128, 127, torch.int8)
        u8 = qd.quantize_per_tensor(x, 0.01, 128, 0, 255, torch.uint8)
        qc = qd.quantize_per_channel(x, self.scales, self.zps, 1, -128, 127, torch.int8)
        s, z = qd.choose_qparams.tensor(x, -128, 127, 1e-5, torch.int8)
        qt = qd.quantize_per_tensor.tensor(x, s, z, -128, 127, torch.int8)
        return (q8, qd.dequantize_per_tensor(q8, 0.03, 2, -128, 127, torch.int8),
                u8, qd.dequantize_per_tensor(u8, 0.01, 128, 0, 255, torch.uint8),
                qc, qd.dequantize_per_channel(qc, self.scales, self.zps, 1, -128, 127, torch.int8),
                qt, qd.dequantize_per_tensor.tensor(qt, s, z, -128, 127, torch.int8))


class QuantToken(nn.Module):
    """Per-token (per-row) dynamic quantisation, as LLM-style exports emit it."""
    def forward(self, x):
        qd = torch.ops.quantized_decomposed
        s, z = qd.choose_qparams_per_token_asymmetric(x, torch.int8)
        q = qd.quantize_per_token(x, s, z, -128, 127, torch.int8)
        return s, z, q, qd.dequantize_per_token(q, s, z, -128, 127, torch.int8, torch.float32)


class Dtypes(nn.Module):
    """The integer and float64 dtypes through arithmetic, comparison, reduction and casts."""
    def forward(self, i8, j8, i16, u8, f64):
        return (i8 + j8, i8 * j8, torch.abs(i8), torch.maximum(i8, j8), (i8 > j8), i8.to(torch.float32),
                i16 * 3 - i16, torch.div(i16, 7, rounding_mode="floor"), torch.remainder(i16, 5), i16.sum(dim=1),
                u8 + u8, u8 // 3, torch.bitwise_and(u8, 0x0F), u8.to(torch.int32) - 100, u8.amax(dim=0),
                torch.exp(f64), f64 @ f64.t(), f64.mean(dim=0), torch.sigmoid(f64), f64.to(torch.float16),
                torch.where(f64 > 0, f64, i16.to(torch.float64)), torch.cumsum(i8, dim=1), torch.cat([i16, i16], 0))


class MoreMath(nn.Module):
    """Elementwise families beyond ops_unary/ops_binary, on float and integer inputs."""
    def forward(self, x, y, i, j):
        p = x.abs() + 0.5
        return (torch.acosh(1 + p), torch.asinh(x), torch.atanh(x * 0.9), torch.cosh(x), torch.sinh(x), torch.tan(x),
                torch.special.erfc(x), torch.exp2(x), torch.frac(x * 3), torch.log10(p), torch.log2(p), torch.lgamma(p),
                torch.isinf(x / (y > 0).float()), torch.isnan(torch.sqrt(x)), torch.hypot(x, y), torch.copysign(x, y),
                torch.logical_xor(x > 0, y > 0), torch.bitwise_or(i, 6), torch.bitwise_xor(i, j), torch.bitwise_not(i),
                torch.bitwise_left_shift(i, j.abs() % 4), torch.bitwise_right_shift(i, j.abs() % 4),
                torch.floor_divide(i, 3), torch.floor_divide(i, j.abs() + 1), F.hardsigmoid(x * 4), F.hardswish(x * 4),
                F.silu(x), F.softplus(x * 3), F.glu(x, dim=1), 2.0 ** x, 1.5 - x, torch.div(i, 4, rounding_mode="trunc"),
                x / 3.0, i + 7, i - 2, torch.clamp(x, y - 0.5, y + 0.5), (x == y.round()), (x <= y), (x < y), (i != 3),
                torch.masked_fill(x, y > 0.3, -2.0))


class MoreReduce(nn.Module):
    """Reductions and scans with dims, keepdim and dtypes."""
    def forward(self, x, b):
        return (torch.logsumexp(x, dim=1), torch.linalg.vector_norm(x, ord=2, dim=-1), torch.cumprod(x, dim=2),
                torch.prod(x), torch.prod(x, dim=1, keepdim=True), torch.std(x, dim=1), torch.var(x, dim=(0, 2), correction=0),
                torch.std(x), torch.any(b), torch.all(b), torch.any(b, dim=1), torch.all(b, dim=0), torch.max(x),
                torch.min(x), torch.min(x, dim=1)[0], torch.min(x, dim=1)[1], x.sum(dim=0, dtype=torch.float64),
                torch.max(x, dim=2, keepdim=True)[0])


class MoreShapes(nn.Module):
    """Layout, creation, padding and pooling ops."""
    def forward(self, x, img, vol, idx):
        a, b, c = torch.unbind(x, dim=0)
        pieces = torch.split(x, 2, dim=2)
        return (torch.tril(x[0]), torch.triu(x[0], 1), torch.roll(x, (1, -2), (1, 2)), torch.stack([a, b, c], dim=1),
                pieces[0], pieces[-1], x[:1].squeeze(0), x.unsqueeze(1).squeeze(1), x[0].t(), x.transpose(0, 2),
                torch.zeros_like(x), torch.ones_like(x) * 2, torch.full((2, 3), 7.0), torch.arange(0, 10, 3),
                torch.arange(5.0) * x[0, 0, 0], x.reshape(4, -1).contiguous(), x.flatten(),
                F.pad(img[:, :, 0], (1, 2), mode="reflect"), F.pad(img, (1, 2, 2, 1), mode="reflect"),
                F.pad(vol, (1, 1, 1, 1, 1, 1), mode="reflect"), F.pad(img[:, :, 0], (2, 1), mode="replicate"),
                F.pad(img, (1, 2, 0, 1), mode="replicate"), F.pad(vol, (1, 0, 0, 1, 1, 1), mode="replicate"),
                F.adaptive_avg_pool2d(img, (2, 3)), F.adaptive_max_pool2d(img, (3, 2)), F.max_pool2d(img, 2),
                torch.scatter_add(x, 2, idx, torch.ones_like(idx, dtype=torch.float32)),
                torch.scatter(x, 2, idx, x[:, :, :2] * 10), torch.baddbmm(x[:, :, :3], x, x.transpose(1, 2)[:, :, :3]),
                torch.sort(x, dim=2, stable=True)[1])


class Q4MLP(nn.Module):
    """Linear layers for torchao 8da4w (int8 dynamic activations, int4 weights in groups of 32):
    XNNPACK qb4w filters whose group scales ExecuTorch writes as bfloat16."""
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 96)
        self.b = nn.Linear(96, 40)
        self.c = nn.Linear(40, 7)  # 40 is no multiple of 32: stays float

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def quantize_8da4w(model, group_size=32):
    """torchao's 8da4w recipe (as ExecuTorch's LLM export uses it) on the Linear layers whose input
    size is a multiple of the group size."""
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
    from torchao.quantization.granularity import PerGroup
    cfg = Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerGroup(group_size))
    quantize_(model, cfg, filter_fn=lambda m, fqn: isinstance(m, nn.Linear) and m.in_features % group_size == 0)
    return model


class ChannelsLast(nn.Module):
    """Inputs and outputs in channels-last (NHWC dim order) memory: ExecuTorch keeps their dim
    order in the program; callers still pass and get logical NCHW arrays."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x, y):
        return torch.relu(self.conv(x)) + y.mean(), x * 2.0


class KVState(nn.Module):
    """A stateful forward: a KV-cache-like buffer written at `pos` (index_put_), a running sum
    (add_ into a buffer) and a step counter; ExecuTorch writes the buffers back with copy_ and
    keeps them across calls of the same loaded method."""
    def __init__(self):
        super().__init__()
        # ExecuTorch 1.3.1 keeps no initial contents for mutated buffers (both runtimes start them
        # at zero), so they start at zero here too
        self.register_buffer("cache", torch.zeros(1, 6, 4))
        self.register_buffer("total", torch.zeros(4))
        self.register_buffer("steps", torch.zeros(1, dtype=torch.int64))

    def forward(self, x, pos):
        self.cache[:, pos] = x
        self.total.add_(x.sum(dim=(0, 1)))
        self.steps.add_(1)
        return self.cache.sum(dim=1) * 2.0, self.total + 0, self.steps * 1


class ScalarIO(nn.Module):
    """0-d tensors in and out of an XNNPACK delegate (the graph holds them as [1]), as in Swin's
    attention-mask computation."""
    def forward(self, s, x):
        t = s * 2.0 + 1.0
        return t, x * t, t - s


class ConvChainQ8(nn.Module):
    """Convolutions each read only by the next (static int8: the values between them stay int8 codes
    in our runtime - 1x1, 3x3, grouped, strided - then a pooled, flattened linear head)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 24, 1)
        self.c3 = nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=3)
        self.c4 = nn.Conv2d(24, 40, 1)
        self.c5 = nn.Conv2d(40, 32, 3, padding=1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.c2(torch.relu(self.c1(x)))
        x = self.c5(torch.relu(self.c4(self.c3(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class InvertedResidualQ8(nn.Module):
    """MobileNet-style blocks in static int8: pointwise expansion, depthwise 3x3 (stride 1) and
    5x5 (stride 2) convolutions, pointwise projection, a residual add (our runtime keeps the values
    between the convolutions as int8 codes; channel counts off multiples of 16 and wide enough
    rows for the depthwise kernel's 4-pixel paths)."""

    def __init__(self):
        super().__init__()
        self.e1 = nn.Conv2d(8, 40, 1)
        self.d1 = nn.Conv2d(40, 40, 3, padding=1, groups=40)
        self.p1 = nn.Conv2d(40, 8, 1)
        self.e2 = nn.Conv2d(8, 72, 1)
        self.d2 = nn.Conv2d(72, 72, 5, stride=2, padding=2, groups=72)
        self.p2 = nn.Conv2d(72, 24, 1)
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        x = x + self.p1(F.relu6(self.d1(F.relu6(self.e1(x)))))
        x = self.p2(F.relu6(self.d2(F.relu6(self.e2(x)))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class FireQ8(nn.Module):
    """SqueezeNet-style fire modules in static int8: max pooling (ceil mode) and channel
    concatenations of convolutions' outputs on one int8 grid (our runtime moves their int8 codes)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 3, padding=1)
        self.squeeze = nn.Conv2d(24, 8, 1)
        self.e1 = nn.Conv2d(8, 20, 1)
        self.e3 = nn.Conv2d(8, 20, 3, padding=1)
        self.head = nn.Conv2d(40, 16, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.stem(x)), 3, 2, ceil_mode=True)
        s = torch.relu(self.squeeze(x))
        x = torch.cat([torch.relu(self.e1(s)), torch.relu(self.e3(s))], 1)
        x = torch.relu(self.head(F.max_pool2d(x, 2, 2)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class RegNetBlockQ8(nn.Module):
    """RegNetY-style blocks in static int8: grouped 3x3 convolutions of narrow groups (4 and 8
    channels: several groups share a 16-column panel of our int8 kernel, the last one ragged), a
    squeeze-excitation block (global pooling, two 1x1 convolutions, sigmoid, channel multiply),
    a residual add, a strided grouped convolution, a pooled linear head."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(16, 32, 1)
        self.b = nn.Conv2d(32, 32, 3, padding=1, groups=8)
        self.se1 = nn.Conv2d(32, 8, 1)
        self.se2 = nn.Conv2d(8, 32, 1)
        self.c = nn.Conv2d(32, 16, 1)
        self.d = nn.Conv2d(16, 40, 1)
        self.e = nn.Conv2d(40, 40, 3, stride=2, padding=1, groups=5)
        self.fc = nn.Linear(40, 10)

    def forward(self, x):
        y = torch.relu(self.b(torch.relu(self.a(x))))
        s = torch.sigmoid(self.se2(torch.relu(self.se1(F.adaptive_avg_pool2d(y, 1)))))
        x = torch.relu(x + self.c(y * s))
        x = torch.relu(self.e(torch.relu(self.d(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class InputViews(nn.Module):
    """Reshapes of delegate inputs, which the delegate reads in place (no copy): read by a batch
    matmul, a slice, a transpose, an elementwise op and by further reshapes (which must copy, not
    take over a buffer the view does not have)."""
    def forward(self, x, q, k, w):
        a = x.reshape(4, 6, 8)
        b = a.reshape(24, 8).reshape(8, 24)           # reshapes of a view
        s = torch.softmax(q.reshape(2, 3, 5) @ k.reshape(2, 5, 3), -1)
        t = a[:, 1:4, :] + 1.0
        return b * 2.0, s, t, a.permute(0, 2, 1) * 1.5, w.reshape(6, 32).reshape(32, 6) - 0.25


class MaskOps(nn.Module):
    """Mask arithmetic as exported attention has it (portable kernels): comparisons with a scalar,
    logical_not, full_like fills of several dtypes, where with a per-row condition, a full one and
    scalar operands."""
    def forward(self, s, i, b):
        m = torch.eq(s, 0.5)                              # float == scalar
        row = torch.logical_not(torch.any(m, dim=-1, keepdim=True))
        neg = torch.full_like(s, float("-inf"))
        w1 = torch.where(row, s, neg)                     # a condition per row
        w2 = torch.where(s > 0.0, s, 0.25)                # full condition, scalar other
        w3 = torch.where(b, i, torch.full_like(i, 7))     # int64, full_like of int64
        nb = torch.logical_not(b)                         # bool
        ni = torch.logical_not(i)                         # int64 -> bool
        f16 = torch.full_like(s, 3.0, dtype=torch.float16).float()
        return w1, w2, w3, nb, ni, torch.eq(i, 3), f16 + s


class AddConstant(nn.Module):
    """ExecuTorch's test_qs8_add_constant model: lifted constants, a buffer and a parameter become
    delegate inputs whose XNN graph order differs from their external ids (arguments bind by
    external id)."""
    def __init__(self, constant):
        super().__init__()
        self._constant1 = constant
        self.register_buffer("_constant2", constant, persistent=False)
        self.register_parameter("_constant3", torch.nn.Parameter(constant))

    def forward(self, x):
        out1 = x + self._constant1 + torch.ones(1, 1, 1)
        out2 = x + self._constant2 + self._constant3
        return out1, out2


class Preserved(nn.Module):
    """Ops that to_edge normally decomposes, kept whole with EdgeCompileConfig(preserve_ops=...) so
    that the runtime's direct kernels for them are checked against torch too."""
    def forward(self, x, img, vol, w, i):
        a, b, c = torch.unbind(x, dim=0)
        return (F.silu(x), F.hardswish(x * 4), F.hardsigmoid(x * 4), F.softplus(x * 3), F.glu(x, dim=2),
                torch.logsumexp(x, dim=1), torch.linalg.vector_norm(x, ord=2, dim=-1), torch.tril(x[0]), torch.triu(x[0], 1),
                torch.roll(x, (1, -2), (1, 2)), torch.stack([a, b, c], dim=1), torch.masked_fill(x, x > 0.3, -2.0),
                torch.std(x, dim=1), torch.var(x, dim=(0, 2), correction=0), torch.frac(x * 3), torch.floor_divide(i, 3),
                torch.rsub(x, 1.5), F.linear(x, w), torch.baddbmm(x[:, :, :3], x, x.transpose(1, 2)[:, :, :3]),
                torch.zeros_like(x), torch.ones_like(x), torch.split(x, 2, dim=2)[1], x[0].t(), x.transpose(0, 2),
                x[:1].squeeze(0), torch.narrow(x, 2, 1, 3),
                F.pad(img[:, :, 0], (1, 2), mode="reflect"), F.pad(img, (1, 2, 2, 1), mode="reflect"),
                F.pad(vol, (1, 1, 1, 1, 1, 1), mode="reflect"), F.pad(img[:, :, 0], (2, 1), mode="replicate"),
                F.pad(img, (1, 2, 0, 1), mode="replicate"), F.pad(vol, (1, 0, 0, 1, 1, 1), mode="replicate"),
                F.max_pool2d(img, 2), F.adaptive_avg_pool2d(img, (2, 3)))


PRESERVED_OPS = [
    "silu.default", "hardswish.default", "hardsigmoid.default", "softplus.default", "glu.default", "logsumexp.default",
    "linalg_vector_norm.default", "tril.default", "triu.default", "roll.default", "stack.default",
    "masked_fill.Scalar", "std.correction", "var.correction", "frac.default", "floor_divide.default", "rsub.Scalar",
    "linear.default", "baddbmm.default", "zeros_like.default", "ones_like.default", "split.Tensor", "t.default",
    "transpose.int", "squeeze.dim", "narrow.default", "unbind.int", "reflection_pad1d.default",
    "reflection_pad2d.default", "reflection_pad3d.default", "replication_pad1d.default", "replication_pad2d.default",
    "replication_pad3d.default", "adaptive_avg_pool2d.default"]


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


def quantize(model, inputs, dynamic):
    """pt2e quantisation with the XNNPACK quantizer: per-channel int8 weights, int8 activations
    (dynamic: per-row at run time; static: calibrated on `inputs`)."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic))
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
