"""Splitting a transform chain: flattening it into known transforms, and cutting it into the
stages the pipeline runs.

``flatten`` unwraps Compose, wrapper presets, ``weights.transforms()`` and timm's and v2's
transforms (as the torchvision v1 transforms they equal, _timm.py / _v2.py) into one list;
``split`` cuts that list by each transform's ``stage`` in the transform table
(_transform_table.py) into the PIL stage (on the decoded image, the leading geometry fused
into the decoder later), the tensor conversion, Normalize and RandomErasing, listing every
transform that has no place. ``random_apply_reasons`` says why a transform cannot run under a
RandomApply's probability.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import torch
import torchvision.transforms as T

from ._recipes import delegate, expand_image_classification, recipe_op
from ._support import NativeOp, Unmapped, Unsupported
from ._timm import as_torchvision as _timm_as_torchvision
from ._transform_table import TIMM_TRANSLATORS, V2_TRANSLATORS, entry_of, is_v1, tensor_antialias
from ._v2 import as_v1 as _v2_as_v1


def flatten(t: Any) -> List[Any]:
    """The transforms `t` is made of, in order: known v1 transforms, recipe classes, NativeOp
    and Unmapped stand-ins, and anything else as it is."""
    if t is None:
        return []
    if is_v1(t, T.Compose):
        return [x for sub in t.transforms for x in flatten(sub)]
    if isinstance(t, (list, tuple)):  # a wrapper's list of transforms
        return [x for sub in t for x in flatten(sub)]
    expanded = expand_image_classification(t)
    if expanded is not None:
        return expanded
    inner = delegate(t)
    if inner is not None and inner is not t:
        return flatten(inner)
    timm = _timm_as_torchvision(t, TIMM_TRANSLATORS)  # timm's classes as the torchvision transforms they equal
    v1 = _v2_as_v1(t, V2_TRANSLATORS) if timm is None else None  # transforms.v2's as the v1 transforms they equal
    if v1 is not None:
        return [y for x in v1 for y in flatten(_from(x, t))]
    return [t] if timm is None else [_from(x, t) for x in timm]


def _from(x: Any, original: Any) -> Any:
    """`x`, a stand-in for `original` (what runs in Python when x's place is in a Python tail)."""
    if not isinstance(x, (Unmapped, NativeOp)) and x is not original:
        x._hdl_original = original
    return x


def original(x: Any) -> Any:
    """What a flattened transform stands for, to run in Python."""
    if isinstance(x, (Unmapped, NativeOp)):
        return x.transform
    return getattr(x, "_hdl_original", x)


class OnTensor:
    """A transform whose entry has ``on_tensor`` (crops and resizes) that torchvision applies
    to a uint8 tensor (after PILToTensor / v2's ToImage, before any float conversion): crops
    are the same copies as on PIL images; resizes use torchvision's tensor resampling, which is
    this library's default kernel (docs/PARITY.md: within 1 grey level), and the tensor path's
    antialias."""

    def __init__(self, t: Any):
        self.t = t

    def antialias(self) -> bool:
        return tensor_antialias(self.t)


def runs_on_pil(t: Any) -> bool:
    """Whether `t` maps to an operator on the decoded image (a PIL-stage entry or a recipe class)."""
    e = entry_of(t)
    return (e is not None and e.stage == "pil") or recipe_op(t) is not None


def random_apply_items(t: Any) -> List[Any]:
    """The transforms of a RandomApply, flattened."""
    return flatten(list(t.transforms))


def random_apply_reasons(t: Any, shared: bool = False) -> List[str]:
    """Why `t` cannot run with a probability of being applied: its own RandomApply, or (shared)
    one draw common to the several transforms of an enclosing RandomApply."""
    if isinstance(t, Unmapped):
        return [t.reason]
    e, name = entry_of(t), type(t).__name__
    op = recipe_op(t)
    if op is not None:  # a recipe's own class: shared only when it has no probability of its own
        if shared and float(op[1].get("probability", 1.0)) < 1:
            return [f"{name} (p < 1) inside a RandomApply of several transforms (two draws) has no native mapping"]
        return []
    if e is None or e.random_apply is None:
        return [f"transform {name} inside RandomApply has no native mapping"]
    if shared and e.own_p and t.p < 1:
        return [f"{name}(p={t.p}) inside a RandomApply of several transforms (two draws) has no native mapping"]
    why = e.random_apply(t)
    if why is not None:
        return [why]
    if e.v1 is T.RandomApply:
        items = random_apply_items(t)
        if len(items) == 1:
            return random_apply_reasons(items[0], shared)
        if any(not x.shares_draw for x in map(entry_of, items) if x is not None):
            return ["a flip inside a RandomApply of several transforms has no native mapping"]  # they draw their own
        return [r for i in items for r in random_apply_reasons(i, True)]
    return []


def split(transform: Any) -> Tuple[List[Any], bool, Optional[Any], List[Any]]:
    """(PIL-stage transforms, float output, tensor-stage Normalize or None, tensor-stage
    RandomErasings); raises Unsupported listing every transform that has no native mapping."""
    pil: List[Any] = []
    to_tensor = None
    float_out = False
    normalize = None
    erasing: List[Any] = []
    reasons: List[str] = []
    for t in flatten(transform):
        if isinstance(t, Unmapped):
            reasons.append(t.reason)
            continue
        e = entry_of(t)
        stage = e.stage if e is not None else None
        name = type(t).__name__
        if to_tensor is None:
            if stage == "to_float":
                to_tensor, float_out = "ToTensor", True
            elif stage == "to_uint8":
                to_tensor = "PILToTensor"
            elif runs_on_pil(t):
                if e is not None and e.v1 is T.RandomApply:
                    reasons += random_apply_reasons(t)
                pil.append(t)
            else:
                reasons.append(f"transform {name} has no native mapping")
        elif e is not None and e.after_conversion:
            # Flips commute with the per-pixel conversion, and with RandomErasing in law (a
            # uniformly placed rectangle mirrored is a uniformly placed rectangle).
            pil.append(t)
        elif e is not None and e.on_tensor and not float_out and normalize is None and not erasing:
            pil.append(OnTensor(t))  # still uint8 (PILToTensor), nothing per-pixel after it yet
        elif stage == "erasing":
            if not float_out:
                reasons.append("RandomErasing on a uint8 tensor (only float tensors are native)")
            erasing.append(t)
        elif stage == "dtype":
            if t.dtype != torch.float32:
                reasons.append(f"ConvertImageDtype({t.dtype}) (only torch.float32 is native)")
            float_out = True
        elif stage == "normalize" and normalize is None:
            if not float_out:
                reasons.append("Normalize on a uint8 tensor (torch would fail too)")
            if erasing:
                reasons.append("Normalize after RandomErasing has no native mapping (RandomErasing after Normalize has)")
            normalize = t
        else:
            reasons.append(f"transform {name} after {to_tensor} has no native mapping")
    if to_tensor is None:
        reasons.append("the transform does not end in a tensor (no ToTensor/PILToTensor): torch's default collate "
                       "cannot batch PIL images either")
    if reasons:
        raise Unsupported(reasons)
    return pil, float_out, normalize, erasing
