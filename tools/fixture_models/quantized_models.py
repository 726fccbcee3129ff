"""Models of the quantised fixtures: PT2E int8 (static and dynamic) for XNNPACK, torchao 8da4w
(quantize_8da4w), the portable quantized_decomposed ops, and the layer norms whose bits
the reference runtime records.

Export environment only (torch + executorch): imported by tools/export_fixtures.py.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


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


class Q4Wide(nn.Module):
    """Two 8da4w linears whose packed 4-bit weights are 64 KiB and more each (256 -> 1024 -> 256:
    128 KiB of nibbles a filter), so a load packs them into the weight arena (issue #29)."""
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(256, 1024)
        self.down = nn.Linear(1024, 256, bias=False)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


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


class QC4MLP(nn.Module):
    """Linear layers for PT2E per-channel int4 weights (XNNPACK qcint4): input channels a multiple
    of 8, not one (40), and odd (37: the program's rows of nibbles padded to whole bytes)."""
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 96)
        self.b = nn.Linear(96, 40, bias=False)
        self.c = nn.Linear(40, 37)
        self.d = nn.Linear(37, 9)

    def forward(self, x):
        return self.d(torch.relu(self.c(torch.relu(self.b(torch.relu(self.a(x)))))))


def quantize_8da4w(model, group_size=32):
    """torchao's 8da4w recipe (as ExecuTorch's LLM export uses it) on the Linear layers whose input
    size is a multiple of the group size."""
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
    from torchao.quantization.granularity import PerGroup
    cfg = Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerGroup(group_size))
    quantize_(model, cfg, filter_fn=lambda m, fqn: isinstance(m, nn.Linear) and m.in_features % group_size == 0)
    return model


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


class SiluDepthwiseQ8(nn.Module):
    """EfficientNet's MBConv in static int8: a pointwise expansion, then SiLU (an elementwise chain
    Convert, Sigmoid, Multiply, Convert that our runtime fuses into one float32 pass), feeding a 5x5
    depthwise convolution and its own SiLU, then a projection. The depthwise reads the chain's
    float32 grid points: it must still sum in exact integers, as XNNPACK does - a float32 kernel's
    rounded sums move an output by a quantization step now and then (on this fixture's 160k
    depthwise outputs: a few), so fusion on and off would differ."""

    def __init__(self):
        super().__init__()
        self.e = nn.Conv2d(8, 96, 1)
        self.d = nn.Conv2d(96, 96, 5, padding=2, groups=96)
        self.p = nn.Conv2d(96, 16, 1)

    def forward(self, x):
        return self.p(F.silu(self.d(F.silu(self.e(x)))))


class ReferenceQ8(nn.Module):
    """Static int8 whose every rounding the reference runtime's arithmetic decides (XNNPACK's
    requantization): a ReLU6 with an observer of its own after the stem (a clamp onto another grid,
    which XNNPACK fuses into the convolution), an expansion, a 5x5 depthwise of stride 2, a
    squeeze-and-excitation (global average pooling, two 1x1 convolutions, sigmoid, a broadcast
    multiply), a projection, a residual block (its add), a mean over 8x8 pixels (a power of two:
    averages on half steps) and a linear layer; the residual block's output is returned too."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.e = nn.Conv2d(16, 48, 1)
        self.d = nn.Conv2d(48, 48, 5, stride=2, padding=2, groups=48)
        self.s1, self.s2 = nn.Conv2d(48, 12, 1), nn.Conv2d(12, 48, 1)
        self.p = nn.Conv2d(48, 24, 1)
        self.r1, self.r2, self.r3 = nn.Conv2d(24, 72, 1), nn.Conv2d(72, 72, 3, padding=1, groups=72), nn.Conv2d(72, 24, 1)
        self.fc = nn.Linear(24, 10)

    def forward(self, x):
        x = F.relu6(self.stem(x))
        y = F.relu(self.d(F.relu(self.e(x))))
        y = y * torch.sigmoid(self.s2(F.relu(self.s1(y.mean((2, 3), keepdim=True)))))
        x = self.p(y)
        x = x + self.r3(F.relu(self.r2(F.relu(self.r1(x)))))
        return self.fc(x.mean((2, 3))), x


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


class ShuffleUnitQ8(nn.Module):
    """ShuffleNetV2-style units in static int8: channel split, 1x1 / depthwise / 1x1 branch,
    concatenation and the channel shuffle (view, transpose, view) - the delegate's int8 transposes,
    reshapes and Converts between float32 and int8 (our runtime moves their int8 codes) - and a
    max pooling of 24 channels (16 a vector and a remainder)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 3, stride=2, padding=1)
        self.b1 = nn.Sequential(nn.Conv2d(24, 24, 3, 2, 1, groups=24), nn.Conv2d(24, 29, 1), nn.ReLU())
        self.b2 = nn.Sequential(nn.Conv2d(24, 29, 1), nn.ReLU(), nn.Conv2d(29, 29, 3, 2, 1, groups=29),
                                nn.Conv2d(29, 29, 1), nn.ReLU())
        self.u = nn.Sequential(nn.Conv2d(29, 29, 1), nn.ReLU(), nn.Conv2d(29, 29, 3, 1, 1, groups=29),
                               nn.Conv2d(29, 29, 1), nn.ReLU())
        self.fc = nn.Linear(58, 10)

    @staticmethod
    def shuffle(x):
        n, c, h, w = x.shape
        return x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.stem(x)), 3, 2, 1)
        x = self.shuffle(torch.cat([self.b1(x), self.b2(x)], 1))
        a, b = x.chunk(2, dim=1)
        x = self.shuffle(torch.cat([a, self.u(b)], 1))
        return self.fc(x.mean([2, 3]))
