"""Models for the ops_* fixtures of the operators added for issue #14 (export env only).

Imported by export_fixtures.py, whose fixtures() appends them (so earlier fixtures keep their
seeds). Each model calls the operators its fixture checks; ops that to_edge would decompose are
kept with `preserve`, ops with no Python out-variant are defined in define_extra_quant_ops().
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

_LIBS = []


class Views(nn.Module):
    """Layout ops: pixel (un)shuffle, diagonal, as_strided, unfold, the scatters, masked ops."""
    def forward(self, x, img, m, src, r):
        return (F.pixel_shuffle(img, 2), F.pixel_unshuffle(img, 2), torch.diagonal(x, 1, 1, 2),
                torch.diagonal(x, -1, 0, 2), torch.as_strided(x, (3, 2, 2), (1, 5, 7), 2), x.unfold(2, 2, 1),
                x.unfold(1, 3, 2), torch.select_scatter(x, src[:, 0], 1, 2), torch.slice_scatter(x, src, 1, 1, 4, 2),
                torch.masked_scatter(x, m, src.flatten().repeat(3)), torch.masked_select(x, m),
                torch.repeat_interleave(r, output_size=9))


VIEWS_PRESERVE = ["select_scatter.default", "pixel_shuffle.default", "pixel_unshuffle.default", "masked_scatter.default",
                  "masked_select.default", "repeat_interleave.Tensor"]


class MathExtra(nn.Module):
    """logit, scalar shifts, var_mean, training batch norm (with and without running stats)."""
    def __init__(self):
        super().__init__()
        self.register_buffer("rm", torch.tensor([0.1, -0.2, 0.3]))
        self.register_buffer("rv", torch.tensor([1.2, 0.8, 1.0]))
        self.w = nn.Parameter(torch.tensor([1.5, 0.5, -1.0]))
        self.b = nn.Parameter(torch.tensor([0.1, 0.2, 0.3]))

    def forward(self, p, i, x):
        a = torch.ops.aten
        rm, rv = self.rm.clone(), self.rv.clone()
        bn = a._native_batch_norm_legit.default(x, self.w, self.b, rm, rv, True, 0.1, 1e-5)
        ns = a._native_batch_norm_legit.no_stats(x, None, self.b, True, 0.1, 1e-3)
        vm = torch.var_mean(x, dim=(0, 2), correction=1, keepdim=True)
        vm2 = torch.var_mean(x, dim=None, correction=0)
        return (torch.logit(p), torch.logit(p, eps=0.2), torch.bitwise_left_shift(i, 3), torch.bitwise_right_shift(i, 2),
                bn[0], bn[1], bn[2], rm, rv, ns[0], ns[1], ns[2], vm[0], vm[1], vm2[0], vm2[1])


MATH_PRESERVE = ["logit.default", "var_mean.correction", "bitwise_left_shift.Tensor_Scalar",
                 "bitwise_right_shift.Tensor_Scalar", "_native_batch_norm_legit.default",
                 "_native_batch_norm_legit.no_stats"]


def stateful_batch_norm(edge):
    """Export functionalises a batch norm that updates running statistics; this puts the
    in-place op (_native_batch_norm_legit, whose .out variant updates running_mean/var) back,
    on the clones the model passes it, and returns the updated clones where the functional op's
    new statistics were used."""
    from executorch.exir.dialects._ops import ops as exir_ops
    fn, legit = exir_ops.edge.aten._native_batch_norm_legit_functional.default, exir_ops.edge.aten._native_batch_norm_legit.default
    for name in edge.methods:
        gm = edge.exported_program(name).graph_module
        for node in list(gm.graph.nodes):
            if node.op != "call_function" or node.target != fn:
                continue
            node.target = legit
            for user in list(node.users):
                k = user.args[1]
                if k >= 3:
                    user.replace_all_uses_with(node.args[k])
                    gm.graph.erase_node(user)
        gm.recompile()


class Sampling(nn.Module):
    """Distances, grid sampling and antialiased bilinear resizing."""
    def forward(self, a, b, img, grid):
        outs = [torch.cdist(a, b), torch.cdist(a, b, p=1.0), torch.cdist(a, b, p=3.0), torch.cdist(a, b, p=float("inf")),
                torch.cdist(a, b, p=0.0), F.pdist(a[0]), F.pdist(a[1], p=1.0), F.pdist(a[0], p=float("inf"))]
        for mode in ("bilinear", "nearest", "bicubic"):
            for pad in ("zeros", "border", "reflection"):
                for ac in (False, True):
                    outs.append(F.grid_sample(img, grid, mode=mode, padding_mode=pad, align_corners=ac))
        outs += [F.interpolate(img, size=(3, 4), mode="bilinear", antialias=True),
                 F.interpolate(img, size=(9, 5), mode="bilinear", antialias=True, align_corners=True),
                 F.interpolate(img, scale_factor=0.5, mode="bilinear", antialias=True)]
        return tuple(outs)


SAMPLING_PRESERVE = ["_cdist_forward.default", "_pdist_forward.default", "grid_sampler_2d.default",
                     "_upsample_bilinear2d_aa.default"]


class Backward(nn.Module):
    """convolution_backward and max_pool2d_with_indices_backward called directly."""
    def forward(self, go, x, w, go1, x1, w1, img):
        a = torch.ops.aten
        g = a.convolution_backward.default(go, x, w, [4], [2, 1], [1, 0], [1, 2], False, [0, 0], 2, [True, True, True])
        g1 = a.convolution_backward.default(go1, x1, w1, None, [1], [1], [1], False, [0], 1, [True, True, False])
        y, idx = a.max_pool2d_with_indices.default(img, [3, 2], [2, 2], [1, 0], [1, 1], False)
        gi = a.max_pool2d_with_indices_backward.default(y * 2 + 1, img, [3, 2], [2, 2], [1, 0], [1, 1], False, idx)
        y2, idx2 = a.max_pool2d_with_indices.default(img, [2, 2], [1, 1], [0, 0], [2, 1], True)
        gi2 = a.max_pool2d_with_indices_backward.default(y2, img, [2, 2], [1, 1], [0, 0], [2, 1], True, idx2)
        return g[0], g[1], g[2], g1[0], g1[1], gi, gi2


class Fft(nn.Module):
    """rfft / irfft / fft of real input, conj_physical, view_as_real: complex intermediates only."""
    def forward(self, x, y):
        r = torch.fft.rfft(x, norm="ortho")
        f2 = torch.fft.rfft2(y)
        full = torch.fft.fft(x, dim=1, norm="forward")
        return (torch.view_as_real(r), torch.view_as_real(f2), torch.view_as_real(full),
                torch.view_as_real(torch.conj_physical(r)), torch.fft.irfft(r, n=x.shape[-1], norm="ortho"),
                torch.fft.irfft(r, n=9), torch.fft.irfft(r, n=5, norm="forward"), torch.fft.irfft2(f2, s=y.shape[-2:]))


class QuantEmbed(nn.Module):
    """quantized_decomposed embeddings (8/4/2-bit, per-row and per-group scales), mixed mm/linear, add."""
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(7)
        self.register_buffer("w8", torch.randint(-128, 128, (10, 8), dtype=torch.int8, generator=g))
        self.register_buffer("s8", torch.rand(10, generator=g) * 0.1 + 0.01)
        self.register_buffer("z8", torch.randint(-5, 5, (10,), generator=g).float())
        self.register_buffer("w4", torch.randint(0, 256, (10, 4), dtype=torch.uint8, generator=g))
        self.register_buffer("s4", torch.rand(10, 2, generator=g) * 0.1 + 0.01)
        self.register_buffer("z4", torch.randint(-3, 3, (10, 2), generator=g).float())
        self.register_buffer("w2", torch.randint(0, 256, (10, 2), dtype=torch.uint8, generator=g))
        self.register_buffer("s2", torch.rand(10, generator=g) * 0.1 + 0.01)
        self.register_buffer("wm", torch.randint(-128, 128, (8, 5), dtype=torch.int8, generator=g))
        self.register_buffer("sm", torch.rand(8, generator=g) * 0.1 + 0.01)
        self.register_buffer("wl", torch.randint(-128, 128, (6, 8), dtype=torch.int8, generator=g))
        self.register_buffer("sl", torch.rand(6, 2, generator=g) * 0.1 + 0.01)

    def forward(self, idx, x, qa, qb):
        q = torch.ops.quantized_decomposed
        return (q.embedding_byte(self.w8, self.s8, self.z8, -128, 127, idx),
                q.embedding_byte.dtype(self.w8, self.s8, None, -128, 127, idx, dtype=torch.float32),
                q.embedding_4bit(self.w4, self.s4, self.z4, -8, 7, idx),
                q.embedding_4bit.dtype(self.w4, self.s4, None, -8, 7, idx, dtype=torch.float32),
                q.embedding_2bit(self.w2, self.s2, None, -2, 1, idx),
                q.embedding_2bit.dtype(self.w2, self.s2, self.s2 * 0 + 1, -2, 1, idx, dtype=torch.float32),
                q.mixed_mm(x, self.wm, self.sm, None), q.mixed_linear(x, self.wl, self.sl, None),
                q.add(qa, 0.05, 10, 0, 255, qb, 0.02, 100, 0, 255, 0.04, 60, 0, 255))


def _mixed_mm(x, w, s, zp):
    return x @ (w.float() * s[:, None])


def _mixed_linear(x, w, s, zp, dtype=None):
    g = (w.shape[1] + s.shape[1] - 1) // s.shape[1] if s.dim() == 2 else w.shape[1]
    sc = s.repeat_interleave(g, dim=1)[:, :w.shape[1]] if s.dim() == 2 else s[:, None]
    return x @ (w.float() * sc).t()


def _qadd(a, sa, za, amin, amax, b, sb, zb, bmin, bmax, so, zo, omin, omax):
    fa = (a.to(torch.int32) - za).float() * torch.tensor(sa, dtype=torch.float32)
    fb = (b.to(torch.int32) - zb).float() * torch.tensor(sb, dtype=torch.float32)
    inv = 1.0 / torch.tensor(so, dtype=torch.float32)
    q = torch.round((fa + fb) * inv) + zo
    return q.clamp(omin, omax).to(a.dtype)


def define_extra_quant_ops():
    """Python implementations and out variants for mixed_mm, mixed_linear and add, which
    ExecuTorch declares without a Python kernel (semantics of its quantized C++ kernels)."""
    if getattr(define_extra_quant_ops, "done", False):
        return
    from executorch.exir.passes import _quant_patterns_and_replacements  # noqa: F401  (defines the ops)
    lib = torch.library.Library("quantized_decomposed", "FRAGMENT")
    lib.define("mixed_mm.out(Tensor input, Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, *, "
               "Tensor(a!) out) -> Tensor(a!)")
    lib.define("mixed_linear.out(Tensor input, Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, "
               "ScalarType? dtype=None, *, Tensor(a!) out) -> Tensor(a!)")
    lib.define("add.out(Tensor a, float a_scale, int a_zero_point, int a_quant_min, int a_quant_max, Tensor b, "
               "float b_scale, int b_zero_point, int b_quant_min, int b_quant_max, float out_scale, "
               "int out_zero_point, int out_quant_min, int out_quant_max, *, Tensor(a!) out) -> Tensor(a!)")
    for name, fn in (("mixed_mm", _mixed_mm), ("mixed_linear", _mixed_linear), ("add", _qadd)):
        lib.impl(name, fn, "CompositeExplicitAutograd")
        lib.impl(name + ".out", lambda *a, _fn=fn, out, **kw: out.copy_(_fn(*a, **kw)), "CompositeExplicitAutograd")
    _LIBS.append(lib)
    define_extra_quant_ops.done = True


class ScalarPrims(nn.Module):
    """Symbolic-size arithmetic: sym_max/sym_min/sym_float and float ceil/round/trunc on sizes;
    _local_scalar_dense from .item()."""
    def forward(self, x, y, n):
        a, b = x.shape[0], y.shape[0]
        hi, lo = torch.sym_max(a, b), torch.sym_min(a, b)
        f = torch.sym_float(a) / 3.0
        k = n.item()
        torch._check(k >= 0)
        torch._check(k <= 4)
        z = torch.zeros(hi, lo) + x.sum()
        return (z, x.new_zeros(math_ceil(f)) + 1, x.new_zeros(math_round(f * 2)) + 2,
                x.new_zeros(math_trunc(f * 2)) + 3, x[:k] * 2)


def math_ceil(v):
    import math
    return math.ceil(v)


def math_round(v):
    return round(v)


def math_trunc(v):
    import math
    return math.trunc(v)


class KvCache(nn.Module):
    """In-place buffer updates: index_put_ (a KV-cache write) and copy_ (a running state)."""
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(2, 6, 3))
        self.register_buffer("state", torch.zeros(2, 3))

    def forward(self, x, pos):
        self.cache.index_put_((torch.tensor([0, 1]).unsqueeze(1), pos.unsqueeze(0)), x.unsqueeze(1))
        self.state.copy_(self.state * 0.5 + x)
        return self.cache + 0, self.state + 0


class MapLoop(nn.Module):
    """torch map (emitted as a loop filling its output with executorch_prim::et_copy_index)."""
    def forward(self, xs, y):
        from torch._higher_order_ops.map import map as hop_map
        return hop_map(lambda x, yy: x * 2 + yy, xs, y)


class Random(nn.Module):
    """rand / randn / native_dropout / empty: checked by shape, range and statistics."""
    def forward(self, x):
        e = torch.empty(4, 5)
        return (torch.rand(200, 50), torch.randn(100, 100), F.dropout(x, 0.3, training=True),
                torch.ops.aten.native_dropout.default(x, 0.5, True)[1], e.fill_(3.0))


class EmptyFill(nn.Module):
    """torch.empty (aten::empty.out, or dim_order_ops::_empty_dim_order.out with dim order) filled."""
    def forward(self, x):
        e = torch.empty(3, 4)
        return e.fill_(2.5) + x, torch.empty(2, 3).fill_(-1.0) * x[:2, :3]
