"""timm's transforms as the torchvision transforms they equal, or the reason they have none.

timm is not a dependency: nothing here imports it. A transform is recognised as timm's when its
class (or a base it inherits its behaviour from) is one of timm's, found through
``sys.modules`` (a timm object exists only once timm is imported). What equals a torchvision
transform is rewritten as one, so the torchvision mapping does the rest (which translator below
serves which timm class is the ``timm`` field of its entry in _transform_table.py):

- ``MaybeToTensor`` -> ``ToTensor``; ``MaybePILToTensor`` -> ``PILToTensor`` (both pass
  tensors through; the dataset hands them PIL images). ``ToNumpy`` (``use_prefetcher=True``)
  -> ``PILToTensor``: uint8 CHW, which default_collate turns into the same uint8 batch.
- ``RandomResizedCropAndInterpolation`` -> ``RandomResizedCrop``: the same get_params (area
  fraction in scale, log-uniform ratio, 10 tries, central-crop fallback) drawn from Python's
  ``random`` in float64 instead of torch's generator in float32: the same distribution, as
  the native stream's is torchvision's. timm also accepts a zero-sized window where
  torchvision retries; that needs a window under half a pixel, where timm's resize fails.
  ``interpolation='random'`` (train.py's default: bilinear or bicubic per image, drawn after
  the window) -> ``RandomInterpolationCrop``, the resize's ``random_interpolation``.
- ``RandomErasing`` (per image: one ``random.random() > p`` test, a count (fixed, or
  ``random.randint(min_count, max_count)``), then ``count`` rectangles of area fraction
  U(min_area, max_area) / count, log-uniform aspect h / w, 10 tries each) -> ``CountedErasing``,
  a torchvision ``RandomErasing(p, scale, ratio, value=0)`` for mode 'const', ``value='random'``
  (per-element standard normal) for 'pixel', with the count range and, for 'rand', one
  standard normal colour per channel: the random_erasing operator's ``count`` and
  ``random_color``.
  ``num_splits`` acts on batches only and ``device`` only says where noise is drawn.
- ``RandAugment`` and ``AutoAugment`` (timm's own, of timm's ``AugmentOp``) -> the
  ``timm_augment`` operator (a NativeOp): the ops by name with their probabilities and
  magnitudes, and the hyper-parameters all ops share (magnitude noise, mmax, translation,
  resampling, fill); ops that differ in those, resampling other than nearest / bilinear /
  bicubic, or an op class or function that is not timm's stay unmapped. ``AugMixAugment``
  (create_transform's 'augmix-m5-w4-d2') -> ``timm_augment`` with policy 'augmix' (its chains of
  the same AugmentOps, the float32 mix and Image.blend); ``blended=True`` stays unmapped.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Dict, List, Optional, Tuple

import torchvision.transforms as T

from ._interpolation import pil_filter
from ._support import NativeOp, Unmapped


class CountedErasing(T.RandomErasing):
    """timm's RandomErasing: after one draw of p, a count uniform in `count` (low, high), then
    that many rectangles (area fraction scaled by 1 / count), each set to `value` or, with
    `random_color`, to one standard normal value per channel. Maps as RandomErasing (it
    overrides no behaviour), read with its count by its entry's arguments (_transform_table.py); never called (the
    torch path runs timm's own)."""

    def __init__(self, count: Tuple[int, int], random_color: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.count, self.random_color = (int(count[0]), int(count[1])), bool(random_color)


class RandomInterpolationCrop(T.RandomResizedCrop):
    """RandomResizedCrop whose interpolation is drawn per image from `interpolations` after the
    window: timm's RandomResizedCropAndInterpolation(interpolation='random'). Maps as
    RandomResizedCrop (it overrides no behaviour) with the list read by its entry's arguments; never
    called (the torch path runs timm's own)."""

    def __init__(self, interpolations: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.interpolations = list(interpolations)


# What each timm class's behaviour is made of: a subclass that overrides none of these is
# taken as its timm base.
_BEHAVIOUR = ("__call__", "forward", "get_params", "_erase")


def _timm_base(t: Any, names: Any) -> Optional[Tuple[str, str]]:
    """The (module, name) key in `names` of the timm class `t` behaves as, or None."""
    known = {}
    for (mod_name, name) in names:
        cls = getattr(sys.modules.get(mod_name), name, None)
        if isinstance(cls, type):
            known[cls] = (mod_name, name)
    cls = type(t)
    for base in cls.__mro__:
        if base in known:
            same = all(getattr(cls, m, None) is getattr(base, m, None) for m in _BEHAVIOUR)
            return known[base] if same else None
    return None


def random_resized_crop(t: Any) -> Any:
    interp = t.interpolation
    if isinstance(interp, (tuple, list)):
        if not interp:
            return Unmapped(t, "timm RandomResizedCropAndInterpolation: no interpolation to choose from")
        return RandomInterpolationCrop(interp, size=list(t.size), scale=tuple(t.scale), ratio=tuple(t.ratio),
                                       interpolation=interp[0])
    return T.RandomResizedCrop(list(t.size), scale=tuple(t.scale), ratio=tuple(t.ratio), interpolation=interp)


def erasing(t: Any) -> Any:
    name = f"timm RandomErasing(mode={t.mode!r}, count=({t.min_count}, {t.max_count}))"
    if t.mode not in ("", "const", "rand", "pixel"):
        return Unmapped(t, f"{name}: mode {t.mode!r} is not one of timm's")
    count = (int(t.min_count), int(t.max_count))
    if count[1] < 1:
        return Unmapped(t, f"{name}: count {count[1]} erases nothing: use no RandomErasing")
    value: Any = "random" if t.mode == "pixel" else 0
    ratio = (math.exp(t.log_aspect_ratio[0]), math.exp(t.log_aspect_ratio[1]))
    try:
        return CountedErasing(count, random_color=t.mode == "rand", p=float(t.probability),
                              scale=(float(t.min_area), float(t.max_area)), ratio=ratio, value=value)
    except (ValueError, TypeError) as e:
        return Unmapped(t, f"{name}: {e}")


def _rand_augment_name(t: Any) -> str:
    """timm's config string for a RandAugment (rand-m9-mstd0.5-inc1), rebuilt from its ops."""
    ops = list(t.ops)
    if not ops:
        return "rand, no ops"
    op = ops[0]
    parts = ["rand", f"m{op.magnitude:g}" if isinstance(op.magnitude, float) else f"m{op.magnitude}"]
    if t.num_layers != 2:
        parts.append(f"n{t.num_layers}")
    if op.prob != 0.5:
        parts.append(f"p{op.prob:g}")
    if op.magnitude_std:
        parts.append("mstd101" if op.magnitude_std == float("inf") else f"mstd{op.magnitude_std:g}")
    if op.magnitude_max is not None:
        parts.append(f"mmax{op.magnitude_max}")
    if any(o.name.endswith("Increasing") for o in ops):
        parts.append("inc1")
    if t.choice_weights is not None:
        parts.append("tweights")
    return "-".join(parts)


def _augment_ops_args(ops: List[Any], where: str) -> Any:
    """timm_augment's shared arguments for timm AugmentOps (ops, probabilities, magnitudes and
    the hyper-parameters every op must share), or Unmapped."""
    aa = sys.modules.get(AA)
    name_to_op, level_to_arg = getattr(aa, "NAME_TO_OP", {}), getattr(aa, "LEVEL_TO_ARG", {})
    op_cls = getattr(aa, "AugmentOp", None)
    shared, consts = set(), set()  # consts: translate_const, which only TranslateX / Y read
    for op in ops:
        if type(op) is not op_cls:
            return Unmapped(op, f"{where}: op {type(op).__name__} is not timm's AugmentOp")
        if op.name not in name_to_op or op.aug_fn is not name_to_op[op.name] or \
                op.level_fn is not level_to_arg.get(op.name):
            return Unmapped(op, f"{where}: op {op.name!r} is not one of timm's (or calls other functions)")
        hp = op.hparams
        std = float(op.magnitude_std or 0)
        resample = op.kwargs.get("resample", 3)
        resample = tuple(resample) if isinstance(resample, (list, tuple)) else (resample,)
        fill = op.kwargs.get("fillcolor", (128, 128, 128))
        fill = tuple(fill) if isinstance(fill, (list, tuple)) else (fill,)
        if op.name in ("TranslateX", "TranslateY"):
            consts.add(hp.get("translate_const", 250))
        shared.add((std, op.magnitude_max or 0, float(hp.get("translate_pct", 0.45)), resample, fill))
    if len(shared) > 1 or len(consts) > 1:
        return Unmapped(ops[0], f"{where}: its ops differ in magnitude noise, bounds, translation, resampling or "
                                "fill (one set for all ops is native)")
    if not shared:
        return {"ops": [], "probabilities": [], "magnitudes": []}
    std, mmax, translate_pct, resample, fill = shared.pop()
    filters = [pil_filter(r) for r in resample]  # Pillow's affine transforms: nearest, bilinear, bicubic
    if None in filters:
        return Unmapped(ops[0], f"{where}: resampling {resample} (Pillow's transforms take nearest, bilinear, "
                                "bicubic)")
    if not all(isinstance(f, int) and 0 <= f <= 255 for f in fill) or len(fill) not in (1, 3):
        return Unmapped(ops[0], f"{where}: fillcolor {fill!r} (1 or 3 ints in [0, 255] are native)")
    if not (0 <= float(mmax) <= 1e6) or not all(abs(float(o.magnitude)) <= 1e6 for o in ops):
        return Unmapped(ops[0], f"{where}: magnitudes beyond 1e6")
    args: Dict[str, Any] = {
        "ops": [o.name for o in ops], "probabilities": [min(1.0, max(0.0, float(o.prob))) for o in ops],
        "magnitudes": [float(o.magnitude) for o in ops], "magnitude_max": float(mmax),
        "translate_pct": translate_pct, "interpolation": filters, "fill": [float(f) for f in fill]}
    if std == float("inf"):
        args["magnitude_uniform"] = True
    elif std > 0:
        args["magnitude_std"] = std
    if consts:
        args["translate_const"] = float(consts.pop())
    return args


def rand_augment(t: Any) -> Any:
    where = f"timm RandAugment ({_rand_augment_name(t)})"
    args = _augment_ops_args(list(t.ops), where)
    if isinstance(args, Unmapped):
        return Unmapped(t, args.reason)
    args.update(policy="rand_augment", num_layers=int(t.num_layers))
    if t.choice_weights is not None:
        args["weights"] = [float(w) for w in t.choice_weights]
    if not 0 <= args["num_layers"] <= 64:
        return Unmapped(t, f"{where}: num_layers {t.num_layers} (0 to 64 are native)")
    return NativeOp(t, "timm_augment", args)


def auto_augment(t: Any) -> Any:
    where = f"timm AutoAugment ({len(t.policy)} sub-policies)"
    subs = [list(sub) for sub in t.policy]
    if not subs or any(not 1 <= len(sub) <= 64 for sub in subs):
        return Unmapped(t, f"{where}: an empty policy or sub-policy has no native mapping")
    args = _augment_ops_args([op for sub in subs for op in sub], where)
    if isinstance(args, Unmapped):
        return Unmapped(t, args.reason)
    args.update(policy="auto_augment", groups=[len(sub) for sub in subs])
    return NativeOp(t, "timm_augment", args)


def augmix(t: Any) -> Any:
    where = f"timm AugMixAugment (width {t.width}, depth {t.depth}, alpha {t.alpha})"
    if t.blended:
        return Unmapped(t, f"{where}: blended=True (timm's per-chain blend, 'not well tested') has no native mapping")
    if not 1 <= int(t.width) <= 64 or int(t.depth) > 64 or not 1e-3 <= float(t.alpha) <= 1e6:
        return Unmapped(t, f"{where}: width 1 to 64, depth up to 64 and alpha in [1e-3, 1e6] are native")
    args = _augment_ops_args(list(t.ops), where)
    if isinstance(args, Unmapped):
        return Unmapped(t, args.reason)
    if not args["ops"]:
        return Unmapped(t, f"{where}: no ops")
    args.update(policy="augmix", width=int(t.width), depth=int(t.depth) if t.depth > 0 else -1, alpha=float(t.alpha))
    return NativeOp(t, "timm_augment", args)


def to_tensor(t: Any) -> Unmapped:
    return Unmapped(t, f"timm ToTensor(dtype={t.dtype}): unscaled pixel values as floats have no native mapping")


TF, RE, AA = "timm.data.transforms", "timm.data.random_erasing", "timm.data.auto_augment"  # timm's modules


def as_torchvision(t: Any, translators: Dict[Tuple[str, str], Any]) -> Optional[List[Any]]:
    """[the torchvision transform `t` equals] or [Unmapped(t, why)] for a timm transform; None
    for anything else (and whenever timm is not imported). `translators`: the transform table's
    TIMM_TRANSLATORS (passed in: the table imports this module's translators)."""
    if not type(t).__module__.startswith("timm.") and not any(
            c.__module__.startswith("timm.") for c in type(t).__mro__):
        return None
    key = _timm_base(t, translators)
    if key is None:
        if type(t).__module__.startswith("timm."):
            return [Unmapped(t, f"timm's {type(t).__name__} has no native mapping")]
        return [Unmapped(t, f"{type(t).__name__} overrides how timm's {_first_timm(t)} transforms")]
    return [translators[key](t)]


def _first_timm(t: Any) -> str:
    return next(c.__name__ for c in type(t).__mro__ if c.__module__.startswith("timm."))
