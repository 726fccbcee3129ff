"""Models of the portable operator fixtures (ops_*): each calls the operators its fixture checks;
PRESERVED_OPS are the ops that to_edge would otherwise decompose.

Export environment only (torch + executorch): imported by tools/export_fixtures.py.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


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
