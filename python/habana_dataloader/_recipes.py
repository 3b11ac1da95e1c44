"""Recognising how recipes write their transforms: their own small PIL classes, wrappers that
delegate to a chain, and torchvision's ``weights.transforms()`` preset.

Self-supervised recipes (DINO, BYOL, MoCo) write PIL transforms of their own. A class whose
``__call__`` is one of the references below (same bytecode, names and constants; ``random``,
``ImageFilter`` and ``ImageOps`` the real modules in its globals) maps to the operator beside
it, reading its attributes (RECIPE_CLASSES: one entry each). A callable wrapper whose
``__call__`` is exactly ``return self.<attr>(img)`` (torchvision's ClassificationPresetTrain /
Eval and their copies) is the chain it delegates to.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Tuple

import torch
import torchvision.transforms as T
from PIL import ImageFilter, ImageOps

from ._support import NativeOp


def _dino_blur_call(self, img):  # DINO / BYOL utils.GaussianBlur(p, radius_min, radius_max)
    do_it = random.random() <= self.prob
    if not do_it:
        return img
    return img.filter(ImageFilter.GaussianBlur(radius=random.uniform(self.radius_min, self.radius_max)))


def _moco_blur_call(self, x):  # MoCo v2/v3 loader.GaussianBlur(sigma=[.1, 2.])
    sigma = random.uniform(self.sigma[0], self.sigma[1])
    x = x.filter(ImageFilter.GaussianBlur(radius=sigma))
    return x


def _solarization_call(self, img):  # DINO / BYOL / MoCo v3 utils.Solarization(p)
    if random.random() < self.p:
        return ImageOps.solarize(img)
    return img


def _moco_solarize_call(self, x):  # MoCo v3 loader.Solarize(), inside RandomApply
    return ImageOps.solarize(x)


#: (reference __call__, its operator and arguments read from the object): one per recipe class.
RECIPE_CLASSES = [
    (_dino_blur_call, lambda t: ("pil_gaussian_blur", {"probability": min(1.0, max(0.0, float(t.prob))),
                                                       "radius": [float(t.radius_min), float(t.radius_max)]})),
    (_moco_blur_call, lambda t: ("pil_gaussian_blur", {"radius": [float(t.sigma[0]), float(t.sigma[1])]})),
    (_solarization_call, lambda t: ("solarize", {"threshold": 128.0, "probability": min(1.0, max(0.0, float(t.p)))})),
    (_moco_solarize_call, lambda t: ("solarize", {"threshold": 128.0})),
]
_RECIPE_MODULES = {"random": random, "ImageFilter": ImageFilter, "ImageOps": ImageOps}


def _same_code(a: Any, b: Any) -> bool:
    return (a.co_code == b.co_code and a.co_names == b.co_names and a.co_consts[1:] == b.co_consts[1:] and
            a.co_argcount == b.co_argcount and not (a.co_flags ^ b.co_flags) & 0xFFFF)


def recipe_op(t: Any) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(operator, arguments) for a recipe's own PIL transform class (or a timm transform
    _timm.py maps to an operator of its own), or None."""
    if isinstance(t, NativeOp):
        return t.op, dict(t.args)
    call = getattr(type(t), "__call__", None)
    code = getattr(call, "__code__", None)
    if code is None:
        return None
    for ref, to_op in RECIPE_CLASSES:
        if not _same_code(code, ref.__code__):
            continue
        glob = call.__globals__
        if any(n in code.co_names and glob.get(n) is not m for n, m in _RECIPE_MODULES.items()):
            return None
        try:
            return to_op(t)
        except (AttributeError, TypeError, ValueError, IndexError):
            return None
    return None


def _delegate_code(self, img):  # the shape of a preset's __call__: return self.<attr>(img)
    return self.transforms(img)


def delegate(t: Any) -> Any:
    """What a callable wrapper calls, when its class's __call__ is exactly ``return
    self.<attr>(img)`` (torchvision's ClassificationPresetTrain/Eval and their copies), else
    None. Compared as bytecode, so a wrapper that does anything more is not taken."""
    call = getattr(type(t), "__call__", None)
    code = getattr(call, "__code__", None)
    ref = _delegate_code.__code__
    if code is None or type(t).__module__.startswith(("torch.", "torchvision.")):
        return None
    if (code.co_code != ref.co_code or code.co_argcount != 2 or code.co_kwonlyargcount or
            (code.co_flags ^ ref.co_flags) & 0xFFFF or len(code.co_names) != 1):  # __future__ flags aside
        return None
    return getattr(t, code.co_names[0], None)


def expand_image_classification(t: Any) -> Optional[List[Any]]:
    """torchvision's ImageClassification preset (``weights.transforms()``) as the transforms
    it is: resize, center crop, to tensor (float), normalize; None for anything else."""
    try:
        from torchvision.transforms._presets import ImageClassification
    except ImportError:
        return None
    if type(t) is not ImageClassification:
        return None
    antialias = getattr(t, "antialias", True)
    return [T.Resize(list(t.resize_size), interpolation=t.interpolation, antialias=antialias),
            T.CenterCrop(list(t.crop_size)), T.PILToTensor(), T.ConvertImageDtype(torch.float32),
            T.Normalize(list(t.mean), list(t.std))]
