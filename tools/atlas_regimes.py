"""The operator atlas's regimes (tools/atlas_export.py exports them; tools/atlas.py runs them).

Each regime: a name that says the regime, a family (the table groups by it), a recipe of
tools/zoo_export.py (fp32-xnn, fp32-portable, fp16-xnn, int8-static-xnn, int8-dyn-xnn, int8-dyn-qc4w-xnn,
int8-static-qc4w-xnn, 8da4w-xnn, 8da8w-xnn), a model constructor and its input shapes (seeded uniform
[-1, 1) inputs; weights the
modules' seeded default initialisation). ``note`` says where the regime comes from (``hole``: a
model's measured slow spot; ``model``: a real model's layer; ``corner``: an edge of the operator's
parameter space). Every hole found in a model becomes a regime here.
Needs torch (the export environment).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

REGIMES = {}
DTYPE = {"fp32-xnn": "fp32", "fp32-portable": "fp32", "fp16-xnn": "fp16", "int8-static-xnn": "int8-static",
         "int8-dyn-xnn": "int8-dynamic", "int8-dyn-qc4w-xnn": "qc4w-dynamic", "int8-static-qc4w-xnn": "qc4w-static",
         "8da4w-xnn": "8da4w",
         "8da8w-xnn": "8da8w"}


class Fn(nn.Module):
    """A functional operator as a module (consts: tensors it closes over, as buffers)."""

    def __init__(self, fn, *consts):
        super().__init__()
        self.fn = fn
        for i, c in enumerate(consts):
            self.register_buffer(f"c{i}", c)

    def forward(self, *xs):
        return self.fn(*xs, *[getattr(self, f"c{i}") for i in range(len(self._buffers))])


def reg(name, family, recipe, make, *shapes, note="", inputs=None, shape=None):
    """Register a regime: make() -> nn.Module; shapes: its inputs' shapes (or inputs() -> tuple)."""
    assert name not in REGIMES, name

    def build():
        m = make()
        ins = inputs() if inputs else tuple(torch.rand(s) * 2 - 1 for s in shapes)
        if recipe.startswith("fp16"):
            m = m.half()
            ins = tuple(t.half() if t.is_floating_point() else t for t in ins)
        return dict(model=m, calls=[ins])

    desc = shape or " ".join("x".join(map(str, s)) for s in shapes)
    REGIMES[name] = dict(recipe=recipe, build=build, family=family, dtype=DTYPE[recipe], shape=desc, note=note)


def seq(*mods):
    return lambda: nn.Sequential(*[m() if callable(m) and not isinstance(m, nn.Module) else m for m in mods])


X = "fp32-xnn"
P = "fp32-portable"
H = "fp16-xnn"
Q8S = "int8-static-xnn"
Q8D = "int8-dyn-xnn"

# ------------------------------------------------------------------ conv2d (dense and grouped)
C2 = nn.Conv2d
reg("conv2d_stem_7x7s2_3_64_224_fp32", "conv2d", X, lambda: C2(3, 64, 7, 2, 3), (1, 3, 224, 224), note="hole: resnet stem")
reg("conv2d_3x3_64_64_56_fp32", "conv2d", X, lambda: C2(64, 64, 3, 1, 1), (1, 64, 56, 56), note="model: resnet18")
reg("conv2d_3x3s2_32_64_112_fp32", "conv2d", X, lambda: C2(32, 64, 3, 2, 1), (1, 32, 112, 112), note="model")
reg("conv2d_3x3_256_256_14_fp32", "conv2d", X, lambda: C2(256, 256, 3, 1, 1), (1, 256, 14, 14), note="model: resnet")
reg("conv2d_1x1_2048_512_7_fp32", "conv2d", X, lambda: C2(2048, 512, 1), (1, 2048, 7, 7), note="hole: resnet50 bottleneck")
reg("conv2d_1x1_64_256_56_fp32", "conv2d", X, lambda: C2(64, 256, 1), (1, 64, 56, 56), note="model: resnet50")
reg("conv2d_1x1s2_256_512_28_fp32", "conv2d", X, lambda: C2(256, 512, 1, 2), (1, 256, 28, 28), note="model: downsample")
reg("conv2d_grouped_3x3_g32_256_28_fp32", "conv2d", X, lambda: C2(256, 256, 3, 1, 1, groups=32), (1, 256, 28, 28),
    note="hole: grouped 3x3 (resnext / regnet)")
reg("conv2d_grouped_3x3_g2_64_56_fp32", "conv2d", X, lambda: C2(64, 64, 3, 1, 1, groups=2), (1, 64, 56, 56), note="corner")
reg("conv2d_dil2_3x3_256_32_fp32", "conv2d", X, lambda: C2(256, 256, 3, 1, 2, dilation=2), (1, 256, 32, 32),
    note="hole: dilated 3x3 (deeplab)")
reg("conv2d_ic1_3x3_1_32_28_fp32", "conv2d", X, lambda: C2(1, 32, 3, 1, 1), (1, 1, 28, 28), note="corner: one input channel")
reg("conv2d_k2s4_16_32_64_fp32", "conv2d", X, lambda: C2(16, 32, 2, 4), (1, 16, 64, 64), note="corner: stride > kernel")
reg("conv2d_3x3_256_256_2x2_fp32", "conv2d", X, lambda: C2(256, 256, 3, 1, 1), (1, 256, 2, 2), note="corner: tiny spatial")
reg("conv2d_3x3_3_16_512_fp32", "conv2d", X, lambda: C2(3, 16, 3, 1, 1), (1, 3, 512, 512), note="corner: huge spatial")
reg("conv2d_3x3_64_64_28_b4_fp32", "conv2d", X, lambda: C2(64, 64, 3, 1, 1), (4, 64, 28, 28), note="corner: batch 4")
reg("conv2d_patch16_3_768_224_fp32", "conv2d", X, lambda: C2(3, 768, 16, 16), (1, 3, 224, 224), note="model: ViT patchify")
reg("conv2d_5x5_32_32_28_fp32", "conv2d", X, lambda: C2(32, 32, 5, 1, 2), (1, 32, 28, 28), note="corner: 5x5")
reg("conv2d_1x7_128_128_17_fp32", "conv2d", X, lambda: C2(128, 128, (1, 7), 1, (0, 3)), (1, 128, 17, 17),
    note="model: inception asymmetric")
reg("conv2d_3x3_relu_64_56_fp32", "conv2d", X, seq(lambda: C2(64, 64, 3, 1, 1), nn.ReLU), (1, 64, 56, 56),
    note="model: conv + fused relu")

# ------------------------------------------------------------------ depthwise
def dw(c, k, s=1, mult=1, d=1):
    return lambda: C2(c, c * mult, k, s, d * (k // 2), dilation=d, groups=c)


reg("dw_3x3_32_112_fp32", "depthwise", X, dw(32, 3), (1, 32, 112, 112), note="model: mobilenet_v2 first")
reg("dw_3x3s2_96_56_fp32", "depthwise", X, dw(96, 3, 2), (1, 96, 56, 56), note="model: mobilenet_v2")
reg("dw_3x3_576_7_fp32", "depthwise", X, dw(576, 3), (1, 576, 7, 7), note="model: small spatial, many channels")
reg("dw_5x5s2_240_28_fp32", "depthwise", X, dw(240, 5, 2), (1, 240, 28, 28), note="hole: efficientnet 5x5/2")
reg("dw_mult2_3x3_56_fp32", "depthwise", X, dw(32, 3, mult=2), (1, 32, 56, 56), note="hole: depth multiplier 2")
reg("dw_mult4_3x3_8_32_fp32", "depthwise", X, dw(8, 3, mult=4), (1, 8, 32, 32), note="corner: depth multiplier 4")
reg("dw_7x7_384_14_fp32", "depthwise", X, dw(384, 7), (1, 384, 14, 14), note="model: convnext")
reg("dw_3x3_dil2_128_28_fp32", "depthwise", X, dw(128, 3, d=2), (1, 128, 28, 28), note="corner: dilated depthwise")
reg("dw_3x3_64_28_b4_fp32", "depthwise", X, dw(64, 3), (4, 64, 28, 28), note="corner: batch 4")

# ------------------------------------------------------------------ conv1d
C1 = nn.Conv1d
reg("conv1d_ic1_k256_s128_4096_fp32", "conv1d", X, lambda: C1(1, 258, 256, 128), (1, 1, 4096), note="hole: STFT front end")
reg("conv1d_ic1_k10_s5_16000_fp32", "conv1d", X, lambda: C1(1, 512, 10, 5), (1, 1, 16000), note="hole: wav2vec2 front end")
reg("conv1d_512_512_k7_1000_fp32", "conv1d", X, lambda: C1(512, 512, 7, 1, 3), (1, 512, 1000), note="hole: 1-D conv stack")
reg("conv1d_512_512_k3s2_3199_fp32", "conv1d", X, lambda: C1(512, 512, 3, 2), (1, 512, 3199), note="model: wav2vec2 layer 2")
reg("conv1d_80_384_k3_3000_fp32", "conv1d", X, lambda: C1(80, 384, 3, 1, 1), (1, 80, 3000), note="model: whisper conv1")
reg("conv1d_dw_k31_256_200_fp32", "conv1d", X, lambda: C1(256, 256, 31, 1, 15, groups=256), (1, 256, 200),
    note="model: conformer long depthwise kernel")
reg("conv1d_grouped_k128_g16_256_100_fp32", "conv1d", X, lambda: C1(256, 256, 128, 1, 64, groups=16), (1, 256, 100),
    note="model: wav2vec2 positional conv")
reg("conv1d_dil4_k3_64_1000_fp32", "conv1d", X, lambda: C1(64, 64, 3, 1, 4, dilation=4), (1, 64, 1000), note="corner: dilation")
reg("conv1d_k1_256_256_500_b4_fp32", "conv1d", X, lambda: C1(256, 256, 1), (4, 256, 500), note="corner: pointwise, batch 4")
reg("conv1d_32_32_k11_d5_25600_fp32", "conv1d", X, lambda: C1(32, 32, 11, 1, 25, dilation=5), (1, 32, 25600),
    note="hole: HiFi-GAN last resblock (few channels, long signal)")
reg("conv1d_64_64_k7_d3_6400_fp32", "conv1d", X, lambda: C1(64, 64, 7, 1, 9, dilation=3), (1, 64, 6400),
    note="hole: HiFi-GAN third resblock")
reg("conv1d_256_256_k11_d5_400_fp32", "conv1d", X, lambda: C1(256, 256, 11, 1, 25, dilation=5), (1, 256, 400),
    note="hole: HiFi-GAN first resblock (weights beyond the per-core cache)")
reg("conv1d_128_128_k3_1600_fp32", "conv1d", X, lambda: C1(128, 128, 3, 1, 1), (1, 128, 1600),
    note="hole: HiFi-GAN second resblock")


class _ResUnit(nn.Module):
    """HiFi-GAN resblock unit: x + conv2(lrelu(conv1(lrelu(x)))), conv1 dilated, same padding."""

    def __init__(self, c, k, d):
        super().__init__()
        self.c1 = nn.Conv1d(c, c, k, 1, (k - 1) * d // 2, dilation=d)
        self.c2 = nn.Conv1d(c, c, k, 1, (k - 1) // 2)

    def forward(self, x):
        return x + self.c2(F.leaky_relu(self.c1(F.leaky_relu(x, 0.1)), 0.1))


reg("conv1d_resunit_64_k7_d3_6400_fp32", "conv1d", X, lambda: _ResUnit(64, 7, 3), (1, 64, 6400),
    note="model: HiFi-GAN resblock unit (leaky ReLU, dilated conv, leaky ReLU, conv, residual)")

# ------------------------------------------------------------------ transposed convolutions
T1, T2 = nn.ConvTranspose1d, nn.ConvTranspose2d
reg("convT1d_512_256_k16_s8_50_fp32", "convT", X, lambda: T1(512, 256, 16, 8), (1, 512, 50), note="hole: vocoder upsampler")
reg("convT1d_64_32_k4_s2_p1_256_fp32", "convT", X, lambda: T1(64, 32, 4, 2, 1), (1, 64, 256), note="model: decoder")
reg("convT1d_64_64_k3_s1_p1_256_fp32", "convT", X, lambda: T1(64, 64, 3, 1, 1), (1, 64, 256), note="corner: stride 1")
reg("convT1d_32_16_k3_s2_p1_op1_128_fp32", "convT", X, lambda: T1(32, 16, 3, 2, 1, 1), (1, 32, 128),
    note="corner: output padding")
reg("convT1d_64_1_k16_s8_100_fp32", "convT", X, lambda: T1(64, 1, 16, 8), (1, 64, 100), note="corner: one output channel")
reg("convT1d_16_16_k2_s3_64_fp32", "convT", X, lambda: T1(16, 16, 2, 3), (1, 16, 64), note="corner: stride > kernel")
reg("convT2d_64_32_k4_s2_32_fp32", "convT", X, lambda: T2(64, 32, 4, 2), (1, 64, 32, 32), note="hole: GAN / decoder")
reg("convT2d_64_32_k4_s2_p1_32_fp32", "convT", X, lambda: T2(64, 32, 4, 2, 1), (1, 64, 32, 32), note="model: DCGAN")
reg("convT2d_128_64_k2_s2_28_fp32", "convT", X, lambda: T2(128, 64, 2, 2), (1, 128, 28, 28), note="model: U-Net up")
reg("convT2d_64_32_k3_s2_p1_op1_28_fp32", "convT", X, lambda: T2(64, 32, 3, 2, 1, 1), (1, 64, 28, 28),
    note="corner: output padding")
reg("convT2d_32_32_k3_s1_p1_28_fp32", "convT", X, lambda: T2(32, 32, 3, 1, 1), (1, 32, 28, 28), note="corner: stride 1")
reg("convT2d_16_16_k4_s4_32_fp32", "convT", X, lambda: T2(16, 16, 4, 4), (1, 16, 32, 32), note="corner: stride = kernel")
reg("convT2d_16_16_k2_s3_32_fp32", "convT", X, lambda: T2(16, 16, 2, 3), (1, 16, 32, 32), note="corner: stride > kernel")
reg("convT2d_16_16_k3_dil2_28_fp32", "convT", X, lambda: T2(16, 16, 3, dilation=2), (1, 16, 28, 28), note="corner: dilation")
reg("convT2d_32_32_k4_s2_g4_16_fp32", "convT", X, lambda: T2(32, 32, 4, 2, 1, groups=4), (1, 32, 16, 16), note="corner: grouped")
reg("convT2d_32_16_k4_s2_p1_16_b4_fp32", "convT", X, lambda: T2(32, 16, 4, 2, 1), (4, 32, 16, 16), note="corner: batch 4")

# ------------------------------------------------------------------ linear fp32
L = nn.Linear
reg("linear_gemv_4096x4096_m1_fp32", "linear", X, lambda: L(4096, 4096), (1, 4096), note="hole: GEMV")
reg("linear_768x768_m128_fp32", "linear", X, lambda: L(768, 768), (1, 128, 768), note="model: bert-base")
reg("linear_768x3072_m128_fp32", "linear", X, lambda: L(768, 3072), (1, 128, 768), note="model: bert-base MLP")
reg("linear_1280x1000_m1_fp32", "linear", X, lambda: L(1280, 1000), (1, 1280), note="model: classifier head")
reg("linear_2048x2048_m64_fp32", "linear", X, lambda: L(2048, 2048), (64, 2048), note="model: prefill")
reg("linear_64x64_m1_fp32", "linear", X, lambda: L(64, 64), (1, 64), note="corner: call overhead")
reg("linear_512x512_b4x64_fp32", "linear", X, lambda: L(512, 512), (4, 64, 512), note="corner: 3-D batch 4")
reg("linear_nobias_576x1536_m49_fp32", "linear", X, lambda: L(576, 1536, bias=False), (1, 49, 576), note="corner: no bias")
reg("mlp_gelu_384x1536_m64_fp32", "block", X, seq(lambda: L(384, 1536), nn.GELU, lambda: L(1536, 384)), (1, 64, 384),
    note="model: transformer MLP")

# ------------------------------------------------------------------ fp16
reg("linear_768x768_m128_fp16", "fp16", H, lambda: L(768, 768), (1, 128, 768), note="model")
reg("linear_gemv_4096x4096_m1_fp16", "fp16", H, lambda: L(4096, 4096), (1, 4096), note="corner: fp16 GEMV")
reg("conv2d_3x3_64_64_56_fp16", "fp16", H, lambda: C2(64, 64, 3, 1, 1), (1, 64, 56, 56), note="model")
reg("dw_3x3_96_56_fp16", "fp16", H, dw(96, 3), (1, 96, 56, 56), note="model")
reg("mlp_gelu_384x1536_m64_fp16", "fp16", H, seq(lambda: L(384, 1536), nn.GELU, lambda: L(1536, 384)), (1, 64, 384),
    note="hole: fp16 Linear-GELU-Linear")
reg("add_64x56x56_fp16", "fp16", H, lambda: Fn(torch.add), (1, 64, 56, 56), (1, 64, 56, 56), note="corner")


def mbv3_small():
    import torchvision.models as tvm
    return tvm.mobilenet_v3_small(weights=None, num_classes=100)


reg("mobilenet_v3_small_128_fp16", "fp16", H, mbv3_small, (1, 3, 128, 128), note="hole: fp16 MobileNetV3-small (whole model)")

# ------------------------------------------------------------------ static int8 (PT2E, per-channel)
reg("q8s_conv2d_3x3_64_64_56", "int8-static", Q8S, lambda: C2(64, 64, 3, 1, 1), (1, 64, 56, 56), note="model")
reg("q8s_conv2d_1x1_256_64_28", "int8-static", Q8S, lambda: C2(256, 64, 1), (1, 256, 28, 28), note="model")
reg("q8s_conv2d_stem_7x7s2_3_64_224", "int8-static", Q8S, lambda: C2(3, 64, 7, 2, 3), (1, 3, 224, 224), note="model")
reg("q8s_dw_3x3_96_56", "int8-static", Q8S, dw(96, 3), (1, 96, 56, 56), note="model")
reg("q8s_dw_5x5s2_240_28", "int8-static", Q8S, dw(240, 5, 2), (1, 240, 28, 28), note="model")
reg("q8s_linear_768x768_m128", "int8-static", Q8S, lambda: L(768, 768), (1, 128, 768), note="model")
reg("q8s_conv1d_80_384_k3_3000", "int8-static", Q8S, lambda: C1(80, 384, 3, 1, 1), (1, 80, 3000), note="corner")
reg("q8s_add_64x56x56", "int8-static", Q8S, lambda: Fn(torch.add), (1, 64, 56, 56), (1, 64, 56, 56), note="model: residual")
reg("q8s_maxpool_3x3s2_64_112", "int8-static", Q8S, lambda: nn.MaxPool2d(3, 2, 1), (1, 64, 112, 112), note="model")
reg("q8s_gap_1280x7x7", "int8-static", Q8S, lambda: nn.AdaptiveAvgPool2d(1), (1, 1280, 7, 7), note="model")
reg("q8s_convT2d_64_32_k4_s2_32", "int8-static", Q8S, lambda: T2(64, 32, 4, 2), (1, 64, 32, 32), note="corner")


class _Fire(nn.Module):
    """SqueezeNet's fire module: squeeze 1x1 + ReLU, then expand 1x1 and 3x3 (+ ReLU), concatenated."""

    def __init__(self, c, sq, e1, e3):
        super().__init__()
        self.sq, self.e1, self.e3 = nn.Conv2d(c, sq, 1), nn.Conv2d(sq, e1, 1), nn.Conv2d(sq, e3, 3, 1, 1)

    def forward(self, x):
        x = F.relu(self.sq(x))
        return torch.cat([F.relu(self.e1(x)), F.relu(self.e3(x))], 1)


class _SE(nn.Module):
    """EfficientNet's squeeze-excitation: x * sigmoid(fc2(silu(fc1(mean(x)))))."""

    def __init__(self, c, r):
        super().__init__()
        self.f1, self.f2 = nn.Conv2d(c, r, 1), nn.Conv2d(r, c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.f2(F.silu(self.f1(x.mean((2, 3), keepdim=True)))))


# (the twentieth session: the static-int8 programs that trail the reference once it runs one
# thread on one core - SqueezeNet 1.29x, EfficientNet-B0 1.20x at 1 thread)
reg("q8s_conv2d_stem_3x3s2_3_64_128", "int8-static", Q8S, lambda: C2(3, 64, 3, 2), (1, 3, 128, 128),
    note="hole: squeezenet1_1 stem (3 input channels, K = 27)")
reg("q8s_fire_128_16_64_31", "int8-static", Q8S, lambda: _Fire(128, 16, 64, 64), (1, 128, 31, 31),
    note="hole: squeezenet fire module (1x1 of 16 channels in, concat)")
reg("q8s_se_96_4_28", "int8-static", Q8S, lambda: _SE(96, 4), (1, 96, 28, 28), note="hole: efficientnet SE block")
reg("se_96_4_28_fp32", "block", X, lambda: _SE(96, 4), (1, 96, 28, 28), note="hole: efficientnet SE block")

# ------------------------------------------------------------------ dynamic int8 (linears)
reg("q8d_linear_768x768_m128", "int8-dynamic", Q8D, lambda: L(768, 768), (1, 128, 768), note="hole: bert")
reg("q8d_linear_gemv_4096x4096_m1", "int8-dynamic", Q8D, lambda: L(4096, 4096), (1, 4096), note="corner: GEMV")
reg("q8d_linear_768x3072_m1", "int8-dynamic", Q8D, lambda: L(768, 3072), (1, 1, 768), note="model: decode")
reg("q8d_linear_512x512_b4x64", "int8-dynamic", Q8D, lambda: L(512, 512), (4, 64, 512), note="corner: 3-D batch 4")

# ------------------------------------------------------------------ torchao 4-bit / 8-bit weights
reg("linear_8da4w_2048x2048_m1", "4-bit", "8da4w-xnn", lambda: L(2048, 2048, bias=False), (1, 2048), note="hole: decode")
reg("linear_8da4w_2048x8192_m64", "4-bit", "8da4w-xnn", lambda: L(2048, 8192, bias=False), (64, 2048), note="hole: prefill")
reg("linear_8da4w_4096x4096_m1", "4-bit", "8da4w-xnn", lambda: L(4096, 4096, bias=False), (1, 4096), note="model: 7B decode")
reg("linear_8da4w_576x1536_m128", "4-bit", "8da4w-xnn", lambda: L(576, 1536, bias=False), (1, 128, 576), note="model: smollm")
reg("linear_8da8w_2048x2048_m1", "4-bit", "8da8w-xnn", lambda: L(2048, 2048, bias=False), (1, 2048), note="corner: 8-bit weights")
# PT2E per-channel int4 weights (XNNPACK qcint4: one scale a column), dynamic int8 activations
Q4C = "int8-dyn-qc4w-xnn"
reg("linear_qc4w_2048x2048_m1", "4-bit", Q4C, lambda: L(2048, 2048, bias=False), (1, 2048), note="corner: qc4w decode")
reg("linear_qc4w_2048x8192_m64", "4-bit", Q4C, lambda: L(2048, 8192, bias=False), (64, 2048), note="corner: qc4w prefill")
reg("linear_qc4w_576x1536_m128", "4-bit", Q4C, lambda: L(576, 1536), (1, 128, 576), note="corner: qc4w, bias")
# (static int8 activations x qc4w: the partitioner emits it, XNNPACK runs it as qs8-qc4w)
reg("q8s_linear_qc4w_768x768_m128", "4-bit", "int8-static-qc4w-xnn", lambda: L(768, 768), (1, 128, 768),
    note="corner: static qc4w")

# ------------------------------------------------------------------ attention
reg("attn_qk_12x128x64", "attention", X, lambda: Fn(lambda q, k: q @ k.transpose(-1, -2)), (1, 12, 128, 64), (1, 12, 128, 64),
    note="hole: attention matmul q k^T")
reg("attn_av_12x128x64", "attention", X, lambda: Fn(torch.matmul), (1, 12, 128, 128), (1, 12, 128, 64), note="model: p v")
reg("attn_qk_decode_8x1x512x64", "attention", X, lambda: Fn(lambda q, k: q @ k.transpose(-1, -2)), (1, 8, 1, 64),
    (1, 8, 512, 64), note="corner: decode step")
reg("sdpa_8x128x64", "attention", X, lambda: Fn(F.scaled_dot_product_attention), (1, 8, 128, 64), (1, 8, 128, 64),
    (1, 8, 128, 64), note="model: F.scaled_dot_product_attention")
reg("bmm_16x256x64x256", "attention", X, lambda: Fn(torch.bmm), (16, 256, 64), (16, 64, 256), note="corner: bmm")

# ------------------------------------------------------------------ pooling
reg("gap_1280x7x7_fp32", "pooling", X, lambda: nn.AdaptiveAvgPool2d(1), (1, 1280, 7, 7), note="hole: global average pool")
reg("gap_mean_2048x7x7_fp32", "pooling", X, lambda: Fn(lambda x: x.mean((2, 3), keepdim=True)), (1, 2048, 7, 7), note="model")
reg("maxpool_3x3s2p1_64_112_fp32", "pooling", X, lambda: nn.MaxPool2d(3, 2, 1), (1, 64, 112, 112), note="model: resnet")
reg("maxpool_2x2s2_128_56_fp32", "pooling", X, lambda: nn.MaxPool2d(2, 2), (1, 128, 56, 56), note="model: vgg")
reg("avgpool_2x2s2_256_28_fp32", "pooling", X, lambda: nn.AvgPool2d(2, 2), (1, 256, 28, 28), note="model: densenet")
reg("avgpool_3x3s1p1_192_28_fp32", "pooling", X, lambda: nn.AvgPool2d(3, 1, 1), (1, 192, 28, 28), note="model: inception")
reg("adaptive_avgpool_14to7_512_fp32", "pooling", X, lambda: nn.AdaptiveAvgPool2d(7), (1, 512, 14, 14), note="corner")
reg("maxpool1d_k3s2_64_1000_fp32", "pooling", X, lambda: nn.MaxPool1d(3, 2), (1, 64, 1000), note="corner: 1-D")

# ------------------------------------------------------------------ resize and pad
reg("upsample_nearest2x_64_56_fp32", "resize", X, lambda: nn.Upsample(scale_factor=2, mode="nearest"), (1, 64, 56, 56),
    note="model: FPN / U-Net")
reg("upsample_bilinear2x_32_56_fp32", "resize", X, lambda: nn.Upsample(scale_factor=2, mode="bilinear"), (1, 32, 56, 56),
    note="model")
reg("upsample_bilinear_ac_32_28to56_fp32", "resize", X,
    lambda: nn.Upsample(size=(56, 56), mode="bilinear", align_corners=True), (1, 32, 28, 28), note="corner: align_corners")
reg("pad_const_1111_64_56_fp32", "resize", X, lambda: Fn(lambda x: F.pad(x, (1, 1, 1, 1))), (1, 64, 56, 56), note="model")
reg("pad_reflect1d_3_80_3000_fp32", "resize", X, lambda: Fn(lambda x: F.pad(x, (3, 3), mode="reflect")), (1, 80, 3000),
    note="model: vocoder / STFT")
reg("pad_replicate2d_2_32_64_fp32", "resize", X, lambda: Fn(lambda x: F.pad(x, (2, 2, 2, 2), mode="replicate")),
    (1, 32, 64, 64), note="corner")

# ------------------------------------------------------------------ elementwise and broadcast
E = (1, 64, 56, 56)
reg("add_64x56x56_fp32", "elementwise", X, lambda: Fn(torch.add), E, E, note="model: residual")
reg("add_bcast_chan_64x56x56_fp32", "elementwise", X, lambda: Fn(torch.add), E, (1, 64, 1, 1), note="corner: channel broadcast")
reg("mul_bcast_row_128x768_fp32", "elementwise", X, lambda: Fn(torch.mul), (1, 128, 768), (768,), note="corner: row broadcast")
reg("mul_bcast_outer_256x1_1x256_fp32", "elementwise", X, lambda: Fn(torch.mul), (256, 1), (1, 256), note="corner: outer")
reg("sub_scalar_div_128x768_fp32", "elementwise", X, lambda: Fn(lambda x: (x - 0.5) / 3.0), (1, 128, 768), note="corner")
reg("relu_64x56x56_fp32", "elementwise", X, nn.ReLU, E, note="model")
reg("hardswish_64x56x56_fp32", "elementwise", X, nn.Hardswish, E, note="model: mobilenet_v3")
reg("sigmoid_64x56x56_fp32", "elementwise", X, nn.Sigmoid, E, note="model")
reg("silu_64x56x56_fp32", "elementwise", X, nn.SiLU, E, note="model: efficientnet")
reg("tanh_128x768_fp32", "elementwise", X, nn.Tanh, (1, 128, 768), note="model")
reg("relu6_64x56x56_fp32", "elementwise", X, nn.ReLU6, E, note="model: mobilenet_v2")
reg("gelu_128x3072_fp32", "elementwise", X, nn.GELU, (1, 128, 3072), note="hole: GELU")
reg("gelu_tanh_128x3072_fp32", "elementwise", X, lambda: nn.GELU("tanh"), (1, 128, 3072), note="model: gpt2")
reg("se_gate_96x28x28_fp32", "elementwise", X, lambda: Fn(lambda x, s: x * torch.sigmoid(s)), (1, 96, 28, 28), (1, 96, 1, 1),
    note="model: squeeze-excite gate")

# ------------------------------------------------------------------ normalisation, softmax, layout
reg("softmax_12x128x128_fp32", "norm-layout", X, lambda: nn.Softmax(-1), (1, 12, 128, 128), note="hole: softmax")
reg("softmax_1x32000_fp32", "norm-layout", X, lambda: nn.Softmax(-1), (1, 32000), note="corner: vocabulary")
reg("layernorm_768_m128_fp32", "norm-layout", X, lambda: nn.LayerNorm(768), (1, 128, 768), note="hole: layer norm")
reg("layernorm_384_m1500_fp32", "norm-layout", X, lambda: nn.LayerNorm(384), (1, 1500, 384), note="model: whisper")
reg("rmsnorm_2048_m64_fp32", "norm-layout", X,
    lambda: Fn(lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, torch.rand(2048)), (64, 2048),
    note="model: llama RMSNorm (few ops)")
reg("batchnorm_64x56x56_fp32", "norm-layout", X, lambda: nn.BatchNorm2d(64), E, note="corner: standalone batch norm")
reg("permute_0213_128x12x64_fp32", "norm-layout", X, lambda: Fn(lambda x: x.permute(0, 2, 1, 3).contiguous()),
    (1, 128, 12, 64), note="hole: heads permute")
reg("permute_nchw_nhwc_64x56x56_fp32", "norm-layout", X, lambda: Fn(lambda x: x.permute(0, 2, 3, 1).contiguous()), E,
    note="hole: layout permute")
reg("transpose_last2_768x128_fp32", "norm-layout", X, lambda: Fn(lambda x: x.transpose(1, 2).contiguous()), (1, 768, 128),
    note="model")
reg("cat_chan_2x64x28x28_fp32", "norm-layout", X, lambda: Fn(lambda a, b: torch.cat([a, b], 1)), (1, 64, 28, 28),
    (1, 64, 28, 28), note="model: densenet / shufflenet")
reg("channel_shuffle_116x28x28_fp32", "norm-layout", X,
    lambda: Fn(lambda x: x.view(1, 2, 58, 28, 28).transpose(1, 2).reshape(1, 116, 28, 28)), (1, 116, 28, 28),
    note="model: shufflenet")
reg("slice_step2_64x56x56_fp32", "norm-layout", X, lambda: Fn(lambda x: x[:, :, ::2, 1:-1]), E, note="corner: strided slice")

# ------------------------------------------------------------------ portable (outside the delegates in the zoo)
reg("cumsum_4x1024_portable", "portable", P, lambda: Fn(lambda x: torch.cumsum(x, -1)), (4, 1024), note="model")
reg("index_select_256of1024_portable", "portable", P, lambda: Fn(lambda x, i: x.index_select(1, i), torch.randperm(1024)[:256]),
    (8, 1024, 16), note="model: gather")
reg("embedding_32000x512_s128_portable", "portable", P, lambda: nn.Embedding(32000, 512), inputs=lambda: (torch.randint(0, 32000, (1, 128)),),
    shape="1x128 ids, 32000x512 table", note="model: token embedding")
reg("argmax_64x1000_portable", "portable", P, lambda: Fn(lambda x: x.argmax(-1)), (64, 1000), note="model")
reg("masked_fill_causal_12x128_portable", "portable", P,
    lambda: Fn(lambda x, m: x.masked_fill(m, float("-inf")).softmax(-1), torch.ones(128, 128, dtype=torch.bool).triu(1)),
    (1, 12, 128, 128), note="model: causal mask")
reg("layernorm_2048_m1_portable", "portable", P, lambda: nn.LayerNorm(2048), (1, 1, 2048), note="corner: decode step")
reg("upsample_nearest4x_256_14_portable", "portable", P, lambda: nn.Upsample(scale_factor=4, mode="nearest"),
    (1, 256, 14, 14), note="corner: 4x")
reg("gelu_128x3072_portable", "portable", P, nn.GELU, (1, 128, 3072), note="model")
reg("mean_lastdim_128x768_portable", "portable", P, lambda: Fn(lambda x: x.mean(-1, keepdim=True)), (1, 128, 768), note="model")
