"""The small zoo's timm programs (timm_*, q8d_deit_tiny)."""
from __future__ import annotations

from .registry import img, zoo


def timm_model(name, **kw):
    import timm
    return timm.create_model(name, pretrained=False, num_classes=100, **kw)


TIMM = {  # name: (timm name, kwargs, resolution)
    "deit_tiny": ("deit_tiny_patch16_224", dict(img_size=96), 96),
    "levit_128s": ("levit_128s", dict(img_size=128), 128),
    "ghostnet_050": ("ghostnet_050", {}, 128),
    "fastvit_t8": ("fastvit_t8", {}, 128),
    "mobilevit_xxs": ("mobilevit_xxs", {}, 128),
    "efficientformer_l1": ("efficientformer_l1", {}, 224),
    "dinov2_small": ("vit_small_patch14_dinov2", dict(img_size=98, depth=4), 98),
    "efficientvit_b0": ("efficientvit_b0", {}, 128),
}


def timm_entry(key):
    name, kw, res = TIMM[key]
    return lambda: dict(model=timm_model(name, **kw), calls=[(img(h=res),)])


for _k in TIMM:
    zoo(f"timm_{_k}", "fp32-xnn")(timm_entry(_k))
zoo("timm_deit_tiny_portable", "fp32-portable")(timm_entry("deit_tiny"))
zoo("q8d_deit_tiny", "int8-dyn-xnn")(timm_entry("deit_tiny"))
