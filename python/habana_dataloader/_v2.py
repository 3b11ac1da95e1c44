"""torchvision.transforms.v2's transforms as the v1 transforms they equal on PIL images, or the
reason they have none.

torchvision.transforms.v2 is not imported here: a v2 object exists only once v2 is imported, so
its classes are found through ``sys.modules`` (torchvision 0.14, Debian's, has no v2: nothing
here then does anything). A v2 transform maps to a v1 one only where, applied to the PIL image
ImageFolder's default loader gives, it produces what the v1 one produces: the same kernels
and the same law for its random parameters (checked against torchvision 0.29's v2 source and
on corpus photos, tests/python/test_v2.py). The v1 transforms then map as ever; the torch path
keeps running the v2 transforms themselves. Which translator below serves which v2 class is
the ``v2`` field of that class's entry in the transform table (_transform_table.py).

- ``Compose`` -> its transforms. ``Identity``, ``ToPureTensor`` (a tv_tensors.Image as a plain
  tensor: the same values) -> nothing.
- ``ToImage`` -> ``PILToTensor`` (a PIL image as a uint8 CHW tensor, as tv_tensors.Image);
  ``PILToTensor`` -> ``PILToTensor``; ``ToTensor`` -> ``ToTensor`` (v2's calls v1's).
- ``ToDtype(torch.float32, scale=True)`` and ``ConvertImageDtype(torch.float32)`` ->
  ``ConvertImageDtype(torch.float32)``: the same pixels; v2 multiplies by float32(1 / 255)
  where v1 divides by 255, so 126 of the 256 values differ in the last float32 bit (at most
  6e-8; torchvision documents the two as equivalent up to float precision). Other dtypes, no
  scaling, or a per-type dict stay unmapped.
- ``Normalize``, ``Resize``, ``CenterCrop``, ``RandomResizedCrop``, ``RandomCrop``, ``Pad``,
  ``RandomHorizontalFlip`` / ``RandomVerticalFlip``, ``ColorJitter``, ``Grayscale``,
  ``RandomGrayscale``, ``RandomSolarize``, ``RandomInvert``, ``RandomApply`` (its transforms
  mapped in turn), ``RandomErasing`` -> their v1 namesakes: v2's PIL kernels are v1's own
  (transforms._functional_pil) and its draws have v1's laws (RandomResizedCrop and
  RandomErasing: the same 10 tries; RandomCrop draws no offset where the crop fills a side,
  where v1 draws 0: the same law). Fills are the ones v2 uses for PIL images (a dict: its
  PIL.Image.Image entry, else "others"). Interpolations given as strings or Pillow constants
  become InterpolationMode. Unmapped: ``Resize(size=None)`` (v1 has none), ``RandomCrop`` with
  both ``padding`` and ``pad_if_needed`` in a mode other than constant (v1 pads twice, so the
  second reflection reflects the first; v2 pads once), and a ``_log_ratio`` no longer
  matching ``ratio`` (v2 draws from the former).
- ``RandAugment``, ``TrivialAugmentWide`` -> their v1 namesakes when the magnitudes they can
  draw are v1's. v2's Solarize threshold is 255 * float32(linspace(1, 0)) where v1's is
  float32(linspace(255, 0)): where v1's is an integer, v2's may lie just above it, and on PIL
  images (Pillow inverts pixels not below the threshold) that pixel value is then kept where
  v1 inverts it. RandAugment's default (magnitude 9 of 31 bins) is clear; TrivialAugmentWide's
  31 bins are not (bins 2, 4, 6, 8 and the even ones from 16 to 28: 238.000001 for 238 ...),
  nor are ``AutoAugment``'s three policies (each uses bin 3 of 10: 170.000005 for 170), which
  stay unmapped. Their other ops run the same PIL kernels (checked op by op against v1's
  _apply_op); both draw ops, bins and signs with the same laws.
- ``AugMix`` stays unmapped: on PIL images both run their ops on the uint8 tensor, and v2's
  tensor kernels (AutoContrast, Color, Sharpness, bilinear shear / rotate with a fill) differ
  from v1's by 1 level in places. ``GaussianBlur`` too: v2's kernel is a softmax of
  -(x / sigma)^2 over a rescaled linspace where v1's is exp(-x^2 / 2 sigma^2) normalised, and
  the float32 weights differ in the last bits: about 1 uint8 value in 100,000 rounds 1 level
  apart on PIL images.
- Any other v2 class (``Lambda``, ``RandomChoice``, ``RandomRotation``, batch-level ``MixUp`` /
  ``CutMix``, ...), and a subclass that adds anything but ``__init__`` to a mapped class,
  stays unmapped, named.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Dict, Iterable, List, Optional

import torch
import torchvision.transforms as T

from ._interpolation import mode as _mode
from ._support import Unmapped

_V2 = "torchvision.transforms.v2"

# What a subclass of a mapped v2 class may define and still be taken as it.
_HARMLESS = {"__module__", "__qualname__", "__doc__", "__init__", "__annotations__", "__dict__", "__weakref__",
             "__firstlineno__", "__static_attributes__", "__orig_bases__", "__parameters__", "__slotnames__",
             "extra_repr", "__annotate_func__", "__annotations_cache__"}

def pil_fill(t: Any) -> Any:
    """The fill v2 uses for a PIL image (its _get_fill for PIL.Image.Image)."""
    import PIL.Image
    fills = getattr(t, "_fill", None)
    if not isinstance(fills, dict):
        return t.fill
    return fills.get(PIL.Image.Image, fills.get("others"))


def _same_log_ratio(t: Any) -> bool:
    log_ratio = getattr(t, "_log_ratio", None)
    return log_ratio is None or torch.equal(log_ratio, torch.log(torch.tensor(t.ratio)))


def _name(t: Any) -> str:
    return f"v2.{type(t).__name__}"


def to_dtype(t: Any) -> Any:
    if t.dtype != torch.float32 or not t.scale:
        return Unmapped(t, f"{_name(t)}({t.dtype}, scale={t.scale}) has no native mapping (ToDtype(torch.float32, "
                           "scale=True) is native)")
    return T.ConvertImageDtype(torch.float32)


def resize(t: Any) -> Any:
    if t.size is None:
        return Unmapped(t, f"{_name(t)}(size=None, max_size={t.max_size}) has no native mapping (v1's Resize "
                           "has no size=None)")
    if t.max_size is not None and len(t.size) != 1:
        return Unmapped(t, f"{_name(t)}(size={t.size}, max_size={t.max_size}): torchvision raises (max_size "
                           "needs one size)")
    return T.Resize(list(t.size), interpolation=_mode(t.interpolation), max_size=t.max_size, antialias=t.antialias)


def random_resized_crop(t: Any) -> Any:
    if not _same_log_ratio(t):
        return Unmapped(t, f"{_name(t)}: its _log_ratio (what v2 draws from) is not log(ratio)")
    return T.RandomResizedCrop(list(t.size), scale=tuple(t.scale), ratio=tuple(t.ratio),
                               interpolation=_mode(t.interpolation), antialias=t.antialias)


def random_crop(t: Any) -> Any:
    padding = None
    if t.padding is not None:
        left, right, top, bottom = t.padding  # v2 keeps [left, right, top, bottom]
        padding = [left, top, right, bottom]
        if t.pad_if_needed and t.padding_mode != "constant":
            return Unmapped(t, f"{_name(t)}(padding={padding}, pad_if_needed=True, padding_mode="
                               f"{t.padding_mode!r}): v2 pads once where v1 pads the padded image again, which "
                               "reflects differently (constant padding, or only one of the two, is native)")
    return T.RandomCrop(list(t.size), padding=padding, pad_if_needed=bool(t.pad_if_needed), fill=pil_fill(t),
                        padding_mode=t.padding_mode)


def color_jitter(t: Any) -> Any:
    return T.ColorJitter(brightness=t.brightness or 0, contrast=t.contrast or 0, saturation=t.saturation or 0,
                         hue=t.hue or 0)


def erasing(t: Any) -> Any:
    if not _same_log_ratio(t):
        return Unmapped(t, f"{_name(t)}: its _log_ratio (what v2 draws from) is not log(ratio)")
    value = "random" if t.value is None else list(t.value)
    return T.RandomErasing(p=t.p, scale=tuple(t.scale), ratio=tuple(t.ratio), value=value, inplace=t.inplace)


# ---- auto-augment: the magnitudes v2 can draw must be v1's --------------------------------------

def _below(threshold: float) -> int:
    """How many pixel values Pillow's solarize keeps (i < threshold)."""
    return min(256, max(0, math.ceil(threshold)))


def _magnitudes_differ(t: Any, v1: Any, bins: int, used: Dict[str, Iterable[int]]) -> Optional[str]:
    """Why a magnitude v2's `t` can draw (op -> bins it can draw) acts otherwise than v1's on
    PIL images, or None. The tables are compared at one image size: the size-dependent ones
    (TranslateX/Y) are the same expression of it in both."""
    h = w = 224
    space1 = v1._augmentation_space(bins, (h, w)) if not isinstance(v1, T.TrivialAugmentWide) else \
        v1._augmentation_space(bins)
    space2 = type(t)._AUGMENTATION_SPACE
    for op, ks in used.items():
        if op not in space1 or op not in space2:
            return f"op {op} is not in both versions' tables"
        m1, m2 = space1[op][0], space2[op][0](bins, h, w)
        if (m2 is None) != (m1.ndim == 0):
            return f"op {op} has magnitudes in one version only"
        if m2 is None:
            continue
        for k in ks:
            a, b = float(m1[k]), float(m2[k])
            if op == "Solarize":  # v2: 255 * the table's value on PIL images
                if _below(a) != _below(255.0 * b):
                    return (f"Solarize at magnitude bin {k} of {bins} thresholds at {255.0 * b!r} where v1's is {a!r}: "
                            f"on PIL images pixel value {min(_below(a), _below(255.0 * b))} is kept where v1 inverts it")
            elif (int(a) != int(b)) if op == "Posterize" else a != b:
                return f"{op} at magnitude bin {k} of {bins} is {b!r} where v1's is {a!r}"
    return None


def _auto_augment_common(t: Any) -> Dict[str, Any]:
    return {"interpolation": _mode(t.interpolation), "fill": pil_fill(t)}


def rand_augment(t: Any) -> Any:
    v1 = T.RandAugment(num_ops=t.num_ops, magnitude=t.magnitude, num_magnitude_bins=t.num_magnitude_bins,
                       **_auto_augment_common(t))
    bins = int(t.num_magnitude_bins)
    if not -bins <= int(t.magnitude) < bins:
        return v1  # its entry's arguments say why (magnitude must index the bins)
    why = _magnitudes_differ(t, v1, bins, {op: [int(t.magnitude)] for op in type(t)._AUGMENTATION_SPACE})
    return v1 if why is None else Unmapped(t, f"{_name(t)}(magnitude={t.magnitude}, num_magnitude_bins={bins}): {why}")


def trivial_augment(t: Any) -> Any:
    v1 = T.TrivialAugmentWide(num_magnitude_bins=t.num_magnitude_bins, **_auto_augment_common(t))
    bins = int(t.num_magnitude_bins)
    if bins < 2:
        return v1  # its entry's arguments say why
    why = _magnitudes_differ(t, v1, bins, {op: range(bins) for op in type(t)._AUGMENTATION_SPACE})
    return v1 if why is None else Unmapped(t, f"{_name(t)}(num_magnitude_bins={bins}): {why}")


def auto_augment(t: Any) -> Any:
    policy = t.policy
    if t._policies != t._get_policies(policy):
        return Unmapped(t, f"{_name(t)}: its policies differ from torchvision's {policy.value} policy")
    v1 = T.AutoAugment(policy=policy, **_auto_augment_common(t))
    used: Dict[str, List[int]] = {}
    for sub in t._policies:
        for op, _, k in sub:
            used.setdefault(op, []).extend([] if k is None else [k])
    why = _magnitudes_differ(t, v1, 10, used)
    return v1 if why is None else Unmapped(t, f"{_name(t)}({policy.value}): {why}")


def augmix(t: Any) -> Unmapped:
    return Unmapped(t, f"{_name(t)}: v2 runs AugMix's ops with its own tensor kernels, which differ from v1's "
                       "(the native augmix's) by 1 level in places (AutoContrast, Color, Sharpness, bilinear "
                       "shear/rotate with a fill)")


def gaussian_blur(t: Any) -> Unmapped:
    return Unmapped(t, f"{_name(t)}(kernel_size={list(t.kernel_size)}): v2's Gaussian weights (a softmax) differ "
                       "from v1's (the native gaussian_blur's) in the last float32 bits, so some pixels of a PIL "
                       "image round 1 level apart")


def batch_level(t: Any) -> Unmapped:
    return Unmapped(t, f"{_name(t)} acts on batches: apply it in collate_fn (lambda batch: "
                       f"f(*default_collate(batch)) is native) or in the training loop")


def _v2_class(t: Any) -> Optional[type]:
    """The torchvision.transforms.v2 class `t` is, or derives from; None if none."""
    return next((c for c in type(t).__mro__ if c.__module__.startswith(_V2)), None)


def as_v1(t: Any, translators: Dict[str, Any]) -> Optional[List[Any]]:
    """[the v1 transforms a torchvision.transforms.v2 transform `t` equals] (a Compose: [a v1
    Compose of its transforms]; none for Identity / ToPureTensor) or [Unmapped(t, why)]; None
    for anything else (and whenever v2 is not imported). `translators`: the transform table's
    V2_TRANSLATORS (passed in: the table imports this module's translators)."""
    v2 = sys.modules.get(_V2)
    if v2 is None:
        return None
    base = _v2_class(t)
    if base is None:
        return None
    mapper = translators.get(base.__name__)
    if mapper is None or getattr(v2, base.__name__, None) is not base:
        return [Unmapped(t, f"{_name(t) if type(t) is base else type(t).__name__ + ' (a v2.' + base.__name__ + ')'} "
                            "has no native mapping")]
    for c in type(t).__mro__[:type(t).__mro__.index(base)]:
        extra = {n for n in c.__dict__ if n not in _HARMLESS}
        if "get_params" in extra and getattr(c, "get_params") is getattr(base, "get_params", None):
            extra.discard("get_params")  # v2's Transform.__init_subclass__ copies v1's get_params onto subclasses
        if extra:
            return [Unmapped(t, f"{type(t).__name__} overrides how v2.{base.__name__} transforms "
                                f"({', '.join(sorted(extra))})")]
    try:
        out = mapper(t)
    except (AttributeError, TypeError, ValueError, KeyError) as e:  # another torchvision's v2, odd arguments
        return [Unmapped(t, f"{_name(t)} could not be read as its v1 equivalent: {type(e).__name__}: {e}")]
    return out if isinstance(out, list) else [out]
