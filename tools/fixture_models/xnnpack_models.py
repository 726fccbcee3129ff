"""Models of the XNNPACK fixtures (*_xnn): the delegate's operators, convolution regimes,
input layouts and views, half precision, scalar inputs.

Export environment only (torch + executorch): imported by tools/export_fixtures.py.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


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


class ScalarIO(nn.Module):
    """0-d tensors in and out of an XNNPACK delegate (the graph holds them as [1]), as in Swin's
    attention-mask computation."""
    def forward(self, s, x):
        t = s * 2.0 + 1.0
        return t, x * t, t - s


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


class WinogradConvs(nn.Module):
    """3x3 stride-1 convolutions large enough for the delegate's Winograd F(2x2, 3x3) path
    (xnn_winograd.cpp): a batch of two NCHW network inputs of odd sizes (ragged 2x2 tiles, the fused
    input transpose), paddings 1 and 2 (tiles wholly in the padding), a ReLU6 clamp, a fused residual
    add followed by SiLU (the chain run on the rows as they finish), channels not a multiple of 16,
    no bias, a dilated one (interleaved grids of tiles, unequal paddings); and one below the size
    threshold (direct) beside them."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(8, 16, 3, padding=1)
        self.b = nn.Conv2d(16, 20, 3, padding=2)
        self.c = nn.Conv2d(20, 20, 3, padding=1)
        self.d = nn.Conv2d(20, 36, 3, padding=1, bias=False)
        self.e = nn.Conv2d(36, 16, 3)
        self.f = nn.Conv2d(20, 24, 3, padding=(2, 3), dilation=2)

    def forward(self, x):
        a = torch.clamp(self.a(x), 0.0, 6.0)
        b = self.b(a)
        c = F.silu(self.c(b) + b)
        d = self.d(c)
        return c, d, self.e(F.max_pool2d(d, 2, 2)), torch.relu(self.f(c))


class Winograd1dConvs(nn.Module):
    """1-D stride-1 convolutions on the delegate's Winograd F(3, 3) path (xnn_winograd.cpp): 7 taps
    (three pieces of 3, the last two taps zero) with the filters transformed at load (520 outputs), a
    dilated 3-tap one whose residual add and LeakyReLU are fused after it (its NCHW result written
    block by block), and a dilation-3 5-tap one without bias and without padding on 508 outputs
    (filters transformed at each call)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv1d(96, 96, 7, padding=3)
        self.b = nn.Conv1d(96, 96, 3, padding=2, dilation=2)
        self.c = nn.Conv1d(96, 96, 5, dilation=3, bias=False)

    def forward(self, x):
        a = self.a(x)
        b = F.leaky_relu(self.b(a) + a, 0.1)
        return b, self.c(b)


class DeadTaps(nn.Module):
    """Convolutions whose outer taps read only padding at this input size (lower_dead_taps): a
    dilation-12 3x3 on a 10x10 map (its centre tap alone reads the image), a kernel whose top and
    bottom rows fall in the padding while its columns all read (dilation 9 down, 1 across), and an
    ordinary one beside them."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(8, 16, 3, padding=12, dilation=12)
        self.b = nn.Conv2d(8, 12, 3, padding=(9, 1), dilation=(9, 1))
        self.c = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.a(x)), self.b(x[:, :, :8]), self.c(x)
