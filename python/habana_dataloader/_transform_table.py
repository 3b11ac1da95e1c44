"""The transform table: one entry per transform class, holding every fact the mapping needs.

An entry is keyed by the class's name and says, for torchvision.transforms' class of that
name (``v1``): where the chain has it (``stage``), the operator it becomes (``op``) and that
operator's arguments for it (``args``: raises Unsupported for values with no native mapping,
so it also says which arguments are supported), whether a leading one fuses into the decoder
(``fuse``), what it becomes on a uint8 tensor (``on_tensor``), and whether it may sit inside a
RandomApply (``random_apply``). ``v2`` turns torchvision.transforms.v2's class of that name
into the v1 transforms it equals (_v2.py), ``timm`` timm's (module, translator) (_timm.py).
A class with no entry (or a subclass overriding how its base transforms) has no native
mapping: the loader falls back, or runs it in a Python tail (_python_tail.py).

To add a transform: add its entry to TRANSFORMS below (and, if it needs one, the operator in
pipeline/operators/); _chain.py and _mapping.py need no change unless it is a new stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torchvision
import torchvision.transforms as T

from . import _timm, _v2
from ._interpolation import AFFINE_FILTERS, TENSOR_OP_FILTERS, native_name
from ._support import Unsupported, has_op, require_op

Args = Dict[str, Any]


@dataclass(frozen=True)
class Entry:
    name: str  # the class name (torchvision's v1 / v2, or timm's)
    v1: Optional[type] = None  # the torchvision.transforms class this entry maps natively
    # Where a chain has the v1 class: "compose" (flattened), "pil" (on the decoded image, before
    # the tensor conversion), "to_float" (ToTensor), "to_uint8" (PILToTensor), "dtype"
    # (ConvertImageDtype), "normalize" or "erasing" (on the float tensor).
    stage: str = "pil"
    op: Optional[str] = None  # the operator it becomes (None: the chain's structure takes it)
    args: Optional[Callable[[Any], Args]] = None  # op's arguments on a PIL image (no probability)
    fuse: Optional[Callable[[Any, Optional[bool]], Args]] = None  # image_decoder's, leading the chain
    fuse_order: int = 0  # fused steps come in this order: 0 the resize, 1 the crop after it
    on_tensor: Optional[Callable[[Any, bool], Args]] = None  # op's arguments on a uint8 tensor (antialias)
    random_apply: Optional[Callable[[Any], Optional[str]]] = None  # keeps the shape: why not inside a RandomApply
    own_p: bool = False  # draws its own decision to apply (its `p`), multiplied with a RandomApply's
    shares_draw: bool = True  # may take a RandomApply's shared draw (flips draw their own coin)
    after_conversion: bool = False  # commutes with the tensor conversion (flips)
    v2: Optional[Callable[[Any], Any]] = None  # v2's class -> v1 transform(s) or Unmapped
    timm: Optional[Tuple[str, Callable[[Any], Any]]] = None  # (timm module, translator)


# ---- argument readers ------------------------------------------------------------------------

def hw(size: Any) -> List[int]:
    if isinstance(size, int):
        return [size, size]
    size = list(size)
    return [int(size[0]), int(size[0])] if len(size) == 1 else [int(size[0]), int(size[1])]


def _size(size: Any) -> List[int]:
    return [size] if isinstance(size, int) else list(size)


def _floats(v: Any) -> List[float]:
    return [float(v)] if isinstance(v, (int, float)) else [float(a) for a in v]


def pillow(op: str, interpolation: Any, random_window: bool = False) -> Args:
    """The resize-family operators' ``pillow`` argument for a resize of PIL images (every resize
    this package maps: before ToTensor / PILToTensor, from the default PIL loader), which
    torchvision resamples with PIL.Image.resize. ``pillow=True`` is Pillow's own integer
    arithmetic, Pillow's pixels bit for bit; the float tensor kernel is within 1 grey level for
    bilinear, up to 22 apart for bicubic at sharp edges, and nearest uses another index rule.
    So: ``pillow=True`` for every filter of a deterministic resize (Resize: the eval chain's
    batches then equal torch's bit for bit, for 2.5-5% of resnet-eval's images/s on 2 cores),
    and for every filter but bilinear of a random window (RandomResizedCrop), whose crops are
    not torch's anyway (another random stream), so exactness there buys nothing a user can
    observe while the tensor kernel keeps resnet-train 3% faster
    (samples/benchmark/pillow_resize_ab.py, docs/PARITY.md). A build without the argument keeps
    the tensor path."""
    name = str(getattr(interpolation, "value", interpolation)).lower()
    if (random_window and name == "bilinear") or not has_op(op, "pillow"):
        return {}
    return {"pillow": True}


def rrc_interpolation(t: Any, op: str) -> Args:
    """`op`'s interpolation arguments for RandomResizedCrop `t`: its filter, or with timm's
    interpolation='random' (RandomInterpolationCrop) the filters each image's is drawn from;
    Pillow's arithmetic where ``pillow`` asks for it for any of them."""
    modes = getattr(t, "interpolations", None)
    if not modes:
        return {"interpolation": native_name(t.interpolation, "RandomResizedCrop"),
                **pillow(op, t.interpolation, random_window=True)}
    require_op(op, "random_interpolation")
    names = [native_name(m, "RandomResizedCrop") for m in modes]
    args: Args = {"interpolation": names[0], "random_interpolation": names}
    for m in modes:
        args.update(pillow(op, m, random_window=True))
    return args


def tensor_antialias(t: Any) -> bool:
    """torchvision's antialias for a resize of a uint8 tensor by `t`: the transform's, or its
    default (False for tensors before torchvision 0.17, True since)."""
    a = getattr(t, "antialias", None)
    if isinstance(a, bool):
        return a
    major, minor = (int(x) for x in torchvision.__version__.split(".")[:2])
    return (major, minor) >= (0, 17)


def _rrc_fuse(t: Any, antialias: Optional[bool]) -> Args:
    args: Args = {"random_crop": "resized", "scale": list(t.scale), "ratio": list(t.ratio), "resize": hw(t.size)}
    if antialias is not None:  # torchvision's tensor resampling: the default kernel, the transform's antialias
        return dict(args, antialias=antialias, interpolation=native_name(t.interpolation, "RandomResizedCrop"))
    return dict(args, antialias=True, **rrc_interpolation(t, "image_decoder"))  # PIL: always antialiased


def _resize_fuse(t: Any, antialias: Optional[bool]) -> Args:
    args: Args = {"resize": _size(t.size), "interpolation": native_name(t.interpolation, "Resize")}
    if antialias is not None:
        args["antialias"] = antialias
    else:
        args.update(antialias=True, **pillow("image_decoder", t.interpolation))
    if t.max_size:
        args["max_size"] = int(t.max_size)
    return args


def _random_crop(t: Any) -> Args:
    # torchvision: pad by `padding`, then pad_if_needed's shortfall, then a uniform window.
    pads = [] if t.padding is None else ([t.padding] if isinstance(t.padding, int) else [int(p) for p in t.padding])
    return {"size": hw(t.size), "padding": pads, "pad_if_needed": bool(t.pad_if_needed),
            "padding_mode": t.padding_mode, "fill": _floats(t.fill)}


def _color_jitter(t: Any) -> Args:
    rng = lambda v: [] if v is None else [float(v[0]), float(v[1])]  # noqa: E731
    return {"brightness": rng(t.brightness), "contrast": rng(t.contrast), "saturation": rng(t.saturation),
            "hue": rng(t.hue)}


def _fills(name: str, fill: Any) -> List[float]:
    fills = [] if fill is None else _floats(fill)
    if fill is not None and not isinstance(fill, (int, float)) and len(fills) != 3:
        raise Unsupported(f"{name}: fill {fill!r} has {len(fills)} values for RGB images (torchvision raises)")
    if not all(0 <= f <= 255 for f in fills):
        raise Unsupported(f"{name}: fill {fill!r} outside [0, 255]")
    return fills


def _auto_augment(t: Any) -> Args:
    """auto_augment's arguments for an AutoAugment / RandAugment / TrivialAugmentWide (PIL
    images: Pillow's nearest, bilinear or bicubic transforms, fill int() per channel)."""
    name = type(t).__name__
    interp = native_name(t.interpolation, name)
    if interp not in AFFINE_FILTERS:
        raise Unsupported(f"{name}: interpolation {interp!r} (Pillow's transforms have nearest, bilinear and bicubic)")
    args: Args = {"interpolation": interp, "fill": _fills(name, t.fill)}
    if isinstance(t, T.AutoAugment):
        if t.policies != t._get_policies(t.policy):
            raise Unsupported(f"{name}: its policies differ from torchvision's {t.policy.value} policy")
        return dict(args, policy="auto_augment_" + t.policy.value)
    bins = int(t.num_magnitude_bins)
    if bins < 2:
        raise Unsupported(f"{name}: num_magnitude_bins={bins} (at least 2 are native)")
    args.update(num_magnitude_bins=bins)
    if isinstance(t, T.TrivialAugmentWide):
        return dict(args, policy="trivial_augment_wide")
    magnitude = int(t.magnitude) + (bins if int(t.magnitude) < 0 else 0)  # a tensor index: -1 is the last bin
    if not (0 <= magnitude < bins) or not (0 <= int(t.num_ops) <= 64):
        raise Unsupported(f"{name}: magnitude={t.magnitude}, num_ops={t.num_ops} (magnitude must index the "
                          f"{bins} bins, num_ops at most 64)")
    return dict(args, policy="rand_augment", num_ops=int(t.num_ops), magnitude=magnitude)


def _augmix(t: Any) -> Args:
    """augmix's arguments for an AugMix (its ops are torchvision's tensor ops: nearest or
    bilinear, fill None or floats)."""
    interp = native_name(t.interpolation, "AugMix")
    if interp not in TENSOR_OP_FILTERS:
        raise Unsupported(f"AugMix: interpolation {interp!r} (its tensor ops have nearest and bilinear)")
    fill = t.fill
    fills = [] if fill is None else _floats(fill)
    if len(fills) not in (0, 1, 3) or not all(0 <= f <= 255 for f in fills):
        raise Unsupported(f"AugMix: fill {fill!r} (None, a number or 3 values in [0, 255] are native)")
    if not (1 <= int(t.mixture_width) <= 64 and int(t.chain_depth) <= 64 and 1e-3 <= float(t.alpha) <= 1e6):
        raise Unsupported(f"AugMix: mixture_width={t.mixture_width}, chain_depth={t.chain_depth}, alpha={t.alpha} "
                          "(native: 1 to 64 chains of at most 64 ops, alpha in [1e-3, 1e6])")
    return {"severity": int(t.severity), "mixture_width": int(t.mixture_width), "chain_depth": int(t.chain_depth),
            "alpha": float(t.alpha), "all_ops": bool(t.all_ops), "interpolation": interp, "fill": fills}


def _erasing(t: Any) -> Args:
    """random_erasing's arguments on the float32 CHW images (inplace makes no difference here);
    timm's RandomErasing (a CountedErasing) adds its count and random colour."""
    v = t.value
    values: Args = {"random_values": True} if isinstance(v, str) else {"value": _floats(v)}  # str: "random"
    if isinstance(t, _timm.CountedErasing) and (t.count != (1, 1) or t.random_color):
        require_op("random_erasing", "count", "random_color")
        values["count"] = list(t.count)
        if t.random_color:
            values = {"random_color": True, "count": list(t.count)}
    return dict(probability=float(t.p), scale=[float(s) for s in t.scale], ratio=[float(r) for r in t.ratio], **values)


def _channels(t: Any) -> Optional[str]:
    if t.num_output_channels != 3:
        return (f"RandomApply of Grayscale(num_output_channels={t.num_output_channels}) changes the channel "
                "count of some samples only")
    return None


_ANY = lambda t: None  # noqa: E731  (keeps the image's shape whatever its arguments)
_SAME_ON_TENSOR = lambda args: (lambda t, antialias: args(t))  # noqa: E731  (a crop: the same copy)

# ---- the table ----------------------------------------------------------------------------

_TF, _RE, _AA = _timm.TF, _timm.RE, _timm.AA
TRANSFORMS: List[Entry] = [
    Entry("Compose", T.Compose, stage="compose", v2=lambda t: [T.Compose(list(t.transforms))]),
    # Tensor conversions and the float stage.
    Entry("ToTensor", T.ToTensor, stage="to_float", v2=lambda t: T.ToTensor(), timm=(_TF, _timm.to_tensor)),
    Entry("PILToTensor", T.PILToTensor, stage="to_uint8", v2=lambda t: T.PILToTensor()),
    Entry("ConvertImageDtype", T.ConvertImageDtype, stage="dtype", v2=lambda t: T.ConvertImageDtype(t.dtype)),
    Entry("Normalize", T.Normalize, stage="normalize",
          v2=lambda t: T.Normalize(list(t.mean), list(t.std), inplace=t.inplace)),
    Entry("RandomErasing", T.RandomErasing, stage="erasing", op="random_erasing", args=_erasing, v2=_v2.erasing,
          timm=(_RE, _timm.erasing)),
    # Geometry: fused into the decoder when leading, also on a uint8 tensor (after PILToTensor).
    Entry("RandomResizedCrop", T.RandomResizedCrop, op="random_resized_crop",
          args=lambda t: dict(size=hw(t.size), scale=list(t.scale), ratio=list(t.ratio), antialias=True,
                              **rrc_interpolation(t, "random_resized_crop")),
          fuse=_rrc_fuse,
          on_tensor=lambda t, antialias: dict(size=hw(t.size), scale=list(t.scale), ratio=list(t.ratio),
                                              antialias=antialias,
                                              interpolation=native_name(t.interpolation, "RandomResizedCrop")),
          v2=_v2.random_resized_crop),
    Entry("Resize", T.Resize, op="resize",
          args=lambda t: dict(size=_size(t.size), max_size=int(t.max_size or 0),
                              interpolation=native_name(t.interpolation, "Resize"), antialias=True,
                              **pillow("resize", t.interpolation)),
          fuse=_resize_fuse,
          on_tensor=lambda t, antialias: dict(size=_size(t.size), max_size=int(t.max_size or 0),
                                              interpolation=native_name(t.interpolation, "Resize"), antialias=antialias),
          v2=_v2.resize),
    Entry("CenterCrop", T.CenterCrop, op="crop", args=lambda t: {"crop": hw(t.size)},
          fuse=lambda t, antialias: {"center_crop": hw(t.size)}, fuse_order=1,
          on_tensor=_SAME_ON_TENSOR(lambda t: {"crop": hw(t.size)}), v2=lambda t: T.CenterCrop(list(t.size))),
    Entry("RandomCrop", T.RandomCrop, op="random_crop", args=_random_crop, on_tensor=_SAME_ON_TENSOR(_random_crop),
          v2=_v2.random_crop),
    Entry("Pad", T.Pad, op="pad",
          args=lambda t: {"padding": [t.padding] if isinstance(t.padding, int) else [int(p) for p in t.padding],
                          "padding_mode": t.padding_mode, "fill": _floats(t.fill)},
          v2=lambda t: T.Pad(t.padding, fill=_v2.pil_fill(t), padding_mode=t.padding_mode)),
    Entry("RandomHorizontalFlip", T.RandomHorizontalFlip, op="random_flip", args=lambda t: {"direction": "horizontal"},
          random_apply=_ANY, own_p=True, shares_draw=False, after_conversion=True,
          v2=lambda t: T.RandomHorizontalFlip(t.p)),
    Entry("RandomVerticalFlip", T.RandomVerticalFlip, op="random_flip", args=lambda t: {"direction": "vertical"},
          random_apply=_ANY, own_p=True, shares_draw=False, after_conversion=True,
          v2=lambda t: T.RandomVerticalFlip(t.p)),
    # Colour: keep the shape, so they may be inside a RandomApply.
    Entry("ColorJitter", T.ColorJitter, op="color_jitter", args=_color_jitter, random_apply=_ANY,
          v2=_v2.color_jitter),
    Entry("Grayscale", T.Grayscale, op="grayscale", args=lambda t: {"num_output_channels": int(t.num_output_channels)},
          random_apply=_channels, v2=lambda t: T.Grayscale(t.num_output_channels)),
    Entry("RandomGrayscale", T.RandomGrayscale, op="grayscale",
          args=lambda t: {"num_output_channels": 0},  # as many channels as the input
          random_apply=_ANY, own_p=True, v2=lambda t: T.RandomGrayscale(t.p)),
    Entry("RandomSolarize", T.RandomSolarize, op="solarize", args=lambda t: {"threshold": float(t.threshold)},
          random_apply=_ANY, own_p=True, v2=lambda t: T.RandomSolarize(t.threshold, t.p)),
    Entry("RandomInvert", T.RandomInvert, op="solarize", args=lambda t: {"threshold": 0.0},  # solarize at 0
          random_apply=_ANY, own_p=True, v2=lambda t: T.RandomInvert(t.p)),
    Entry("GaussianBlur", T.GaussianBlur, op="gaussian_blur",
          args=lambda t: {"kernel_size": [int(k) for k in t.kernel_size], "sigma": [float(s) for s in t.sigma]},
          random_apply=_ANY, v2=_v2.gaussian_blur),
    Entry("RandomApply", T.RandomApply, random_apply=_ANY, own_p=True,
          v2=lambda t: T.RandomApply(list(t.transforms), p=t.p)),
    # Automatic augmentation policies (never inside a RandomApply).
    Entry("AutoAugment", T.AutoAugment, op="auto_augment", args=_auto_augment, v2=_v2.auto_augment,
          timm=(_AA, _timm.auto_augment)),
    Entry("RandAugment", T.RandAugment, op="auto_augment", args=_auto_augment, v2=_v2.rand_augment,
          timm=(_AA, _timm.rand_augment)),
    Entry("TrivialAugmentWide", T.TrivialAugmentWide, op="auto_augment", args=_auto_augment,
          v2=_v2.trivial_augment),
    Entry("AugMix", T.AugMix, op="augmix", args=_augmix, v2=_v2.augmix),
    # Names only v2 or timm has: translated into the v1 transforms above (or Unmapped).
    Entry("ToImage", v2=lambda t: T.PILToTensor()),
    Entry("ToDtype", v2=_v2.to_dtype),
    Entry("Identity", v2=lambda t: []),
    Entry("ToPureTensor", v2=lambda t: []),
    Entry("MixUp", v2=_v2.batch_level),
    Entry("CutMix", v2=_v2.batch_level),
    Entry("MaybeToTensor", timm=(_TF, lambda t: T.ToTensor())),
    Entry("MaybePILToTensor", timm=(_TF, lambda t: T.PILToTensor())),
    Entry("ToNumpy", timm=(_TF, lambda t: T.PILToTensor())),
    Entry("RandomResizedCropAndInterpolation", timm=(_TF, _timm.random_resized_crop)),
    Entry("AugMixAugment", timm=(_AA, _timm.augmix)),
]

# ---- lookups -----------------------------------------------------------------------------

BY_V1: Dict[type, Entry] = {e.v1: e for e in TRANSFORMS if e.v1 is not None}
V2_TRANSLATORS: Dict[str, Callable[[Any], Any]] = {e.name: e.v2 for e in TRANSFORMS if e.v2 is not None}
TIMM_TRANSLATORS: Dict[Tuple[str, str], Callable[[Any], Any]] = {
    (e.timm[0], e.name): e.timm[1] for e in TRANSFORMS if e.timm is not None}

# What a class's behaviour is made of: a subclass overriding none of these maps as its base
# (a subclass changing only defaults); its behaviour then is the attributes the entry reads.
_BEHAVIOUR = ("forward", "__call__", "get_params", "_augmentation_space", "_get_policies", "_sample_dirichlet")


def entry_of(t: Any) -> Optional[Entry]:
    """The entry of the torchvision v1 class `t` behaves as, or None."""
    cls = type(t)
    for base in cls.__mro__:
        e = BY_V1.get(base)
        if e is not None:
            return e if all(getattr(cls, m, None) is getattr(base, m, None) for m in _BEHAVIOUR) else None
    return None


def is_v1(t: Any, cls: type) -> bool:
    """Whether `t` behaves as torchvision's `cls` (the class itself, or a subclass changing only defaults)."""
    e = entry_of(t)
    return e is not None and e.v1 is cls

