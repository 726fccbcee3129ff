"""The small zoo's torchvision programs (tv_*, and their int8, dynamic-shape, channels-last and
external-weights variants)."""
from __future__ import annotations

import torch.nn as nn
from torch.export import Dim

from .registry import img, zoo


def tv(fn, **kw):
    import torchvision.models as tvm
    return getattr(tvm, fn)(weights=None, **kw)


def tv_vit_mini():
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=96, patch_size=16, num_layers=4, num_heads=4, hidden_dim=128,
                          mlp_dim=512, num_classes=100)
    nn.init.normal_(m.heads.head.weight, std=0.05)  # torchvision starts the head at zero
    nn.init.normal_(m.heads.head.bias, std=0.05)
    return m


def tv_convnext_mini():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    cfg = [CNBlockConfig(48, 96, 1), CNBlockConfig(96, 192, 1), CNBlockConfig(192, 384, 3), CNBlockConfig(384, None, 1)]
    return ConvNeXt(cfg, stochastic_depth_prob=0.0, num_classes=100)


def tv_swin_mini():
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=48, depths=[2, 2, 2, 2], num_heads=[2, 4, 8, 16],
                           window_size=[7, 7], num_classes=100)


def tv_regnet():
    """regnet_y_400mf with its blocks renamed "blockS_i": ExecuTorch 1.3.1's XNNPACK FuseBatchNormPass
    fails on torchvision's "blockS-i" names ("..._weight_fused_bn is not in list")."""
    from collections import OrderedDict
    m = tv("regnet_y_400mf", num_classes=100)
    for stage in m.trunk_output:
        stage._modules = OrderedDict((k.replace("-", "_"), v) for k, v in stage._modules.items())
    return m


TV_CNN = {  # name: (constructor, kwargs, input resolution)
    "resnet18": (lambda: tv("resnet18", num_classes=100), 128),
    "mobilenet_v2": (lambda: tv("mobilenet_v2", num_classes=100), 128),
    "mobilenet_v3_small": (lambda: tv("mobilenet_v3_small", num_classes=100), 128),
    "mobilenet_v3_large": (lambda: tv("mobilenet_v3_large", num_classes=100), 128),
    "efficientnet_b0": (lambda: tv("efficientnet_b0", num_classes=100), 128),
    "shufflenet_v2": (lambda: tv("shufflenet_v2_x1_0", num_classes=100), 128),
    "squeezenet": (lambda: tv("squeezenet1_1", num_classes=100), 128),
    "densenet121": (lambda: tv("densenet121", num_classes=100), 96),
    "regnet_y_400mf": (tv_regnet, 128),
    "mnasnet0_5": (lambda: tv("mnasnet0_5", num_classes=100), 128),
    "googlenet": (lambda: tv("googlenet", num_classes=100, aux_logits=False, init_weights=True), 128),
    "convnext_mini": (tv_convnext_mini, 128),
    "swin_mini": (tv_swin_mini, 112),
    "vit_mini": (tv_vit_mini, 96),
}


def tv_entry(key):
    make, res = TV_CNN[key]
    return lambda: dict(model=make(), calls=[(img(h=res),)])


for _k in TV_CNN:
    zoo(f"tv_{_k}", "fp32-xnn")(tv_entry(_k))
for _k in ("resnet18", "mobilenet_v2", "vit_mini"):
    zoo(f"tv_{_k}_portable", "fp32-portable")(tv_entry(_k))
for _k in ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "shufflenet_v2", "squeezenet",
           "regnet_y_400mf", "googlenet"):
    zoo(f"q8s_{_k}", "int8-static-xnn")(tv_entry(_k))


@zoo("dyn_resnet18_batch", "dynamic-xnn")
def _():
    return dict(model=tv("resnet18", num_classes=100), calls=[(img(h=96, n=2),), (img(h=96, n=3),)],
                dyn=({0: Dim("batch", min=1, max=4)},))


@zoo("dyn_mobilenet_v2_batch", "dynamic-xnn")
def _():
    return dict(model=tv("mobilenet_v2", num_classes=100), calls=[(img(h=96, n=3),), (img(h=96, n=1),)],
                dyn=({0: Dim("batch", min=1, max=4)},))


for _k in ("resnet18", "mobilenet_v2"):
    zoo(f"cl_{_k}", "channels-last-xnn")(tv_entry(_k))
zoo("ext_resnet18_xnn", "ext-xnn")(tv_entry("resnet18"))
zoo("ext_mobilenet_v2_portable", "ext-portable")(tv_entry("mobilenet_v2"))
