"""Interpolation names: the one table between Pillow's filter constants, torchvision's
InterpolationMode and the resize operators' ``interpolation`` argument.

Every mapping (torchvision v1 and v2, timm) reads its interpolation through ``native_name``
(what the resize operators take) or ``mode`` (a v2 / timm value as v1's InterpolationMode), and
the subsets below say which operator family has which filters.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import torchvision.transforms as T

from ._support import Unsupported

#: Pillow's filter constants (PIL.Image.NEAREST ...), as torchvision names them.
PIL_FILTERS = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}
#: What the resize operators (image_decoder's fused resize, resize, random_resized_crop) take.
RESIZE_KERNELS = ("nearest", "bilinear", "bicubic", "box", "lanczos")
#: What Pillow's affine transforms take: auto_augment's and timm_augment's geometric ops.
AFFINE_FILTERS = ("nearest", "bilinear", "bicubic")
#: What torchvision's tensor ops take: augmix's (AugMix runs on the uint8 tensor).
TENSOR_OP_FILTERS = ("nearest", "bilinear")


def name_of(mode: Any) -> str:
    """An InterpolationMode, a string or a Pillow constant as a lower-case name."""
    name = getattr(mode, "value", mode)
    if isinstance(name, int) and not isinstance(name, bool):  # a PIL constant in old code
        name = PIL_FILTERS.get(name, str(name))
    return str(name).lower()


def native_name(mode: Any, where: str) -> str:
    """The resize operators' name for `mode`; raises Unsupported naming `where` if none has it."""
    name = name_of(mode)
    if name not in RESIZE_KERNELS:
        raise Unsupported(f"{where}: interpolation {name!r} has no native kernel")
    return name


def mode(interpolation: Any) -> T.InterpolationMode:
    """An interpolation (an InterpolationMode, a string or a Pillow constant) as v1 takes it."""
    if isinstance(interpolation, T.InterpolationMode):
        return interpolation
    if isinstance(interpolation, int) and not isinstance(interpolation, bool):
        return T.InterpolationMode(PIL_FILTERS[interpolation])
    return T.InterpolationMode(str(interpolation).lower())


def pil_filter(value: Any, allowed: Tuple[str, ...] = AFFINE_FILTERS) -> Optional[str]:
    """A Pillow filter constant's name when it is one of `allowed`, else None."""
    name = PIL_FILTERS.get(int(value))
    return name if name in allowed else None
