"""torchvision datasets and transforms -> a pipeline graph, or the reason it cannot be one.

The mapping keeps torchvision's semantics: ImageFolder's own ``samples`` (paths, labels and
order; timm's ImageDataset: its reader's, _timm_data.py; a ReturnIndexDataset's labels are
the indices), PIL-stage transforms in order (the leading RandomResizedCrop / Resize / CenterCrop
fused into the decoder, which then decodes only the region it needs), ToTensor + Normalize
as one crop_mirror_normalize pass to float32 CHW, then tensor-stage RandomErasing. Random
application (RandomGrayscale, RandomSolarize, RandomInvert, RandomApply) is the operators'
``probability`` argument; a RandomApply of several transforms binds one coin_flip to all of
them (one draw: all or none). timm's transforms enter as the torchvision transforms they
equal (_timm.py), or with the reason they have none; torchvision.transforms.v2's as the v1
transforms they equal on PIL images (_v2.py), or with the reason they have none. Every
operator and fused decoder argument is looked up in the registry at run time; what is
missing becomes a fallback reason.
"""

from __future__ import annotations

import copy
import random
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
from torch.utils.data import Subset
from torch.utils.data._utils.collate import default_collate
from torchvision.datasets import DatasetFolder
from PIL import Image, ImageFilter, ImageOps
from torchvision.datasets.folder import default_loader, pil_loader

from . import fn
from ._graph import DataNode
from ._timm import CountedErasing, NativeOp, Unmapped, as_torchvision as _timm_as_torchvision
from ._v2 import as_v1 as _v2_as_v1
from ._timm_data import image_dataset_class as _timm_image_dataset, image_dataset_samples as _timm_samples, is_fast_collate


class Unsupported(Exception):
    """The dataset or transform cannot run natively: ``reasons`` lists why, str() joins them."""

    def __init__(self, reasons: Any):
        self.reasons: List[str] = [reasons] if isinstance(reasons, str) else list(reasons)
        super().__init__("; ".join(self.reasons))


_INTERP = {"nearest": "nearest", "bilinear": "bilinear", "bicubic": "bicubic", "box": "box",
           "lanczos": "lanczos"}


def _has(op: str, *args: str) -> bool:
    s = fn.schemas.get(op)
    return s is not None and all(any(a["name"] == x for a in s["args"]) for x in args)


def _require(op: str, *args: str) -> None:
    if not _has(op, *args):
        what = f"operator {op!r}" + (f" with argument(s) {', '.join(args)}" if args else "")
        raise Unsupported(f"this build has no {what}")


def _interp(mode: Any, where: str) -> str:
    name = getattr(mode, "value", mode)
    if isinstance(name, int):  # a PIL constant in old code
        name = {0: "nearest", 2: "bilinear", 3: "bicubic", 4: "box", 1: "lanczos"}.get(name, str(name))
    name = str(name).lower()
    if name not in _INTERP:
        raise Unsupported(f"{where}: interpolation {name!r} has no native kernel")
    return _INTERP[name]


def _hw(size: Any) -> List[int]:
    if isinstance(size, int):
        return [size, size]
    size = list(size)
    return [int(size[0]), int(size[0])] if len(size) == 1 else [int(size[0]), int(size[1])]


def peel_subsets(dataset: Any) -> Tuple[Any, Optional[List[int]]]:
    """The dataset under any (nested) Subsets, and the index map they make (None: no Subset)."""
    indices: Optional[List[int]] = None
    ds = dataset
    while isinstance(ds, Subset):
        idx = [int(i) for i in ds.indices]
        indices = idx if indices is None else [idx[i] for i in indices]
        ds = ds.dataset
    return ds, indices


@dataclass
class ImageSource:
    """What the native path reads for an image dataset: its files and labels in dataset order."""

    dataset: Any  # the dataset under any Subsets: a DatasetFolder or timm's ImageDataset
    samples: Sequence[Tuple[str, Any]]  # (path, target) per dataset index
    transform: Any
    indices: Optional[List[int]]  # the index map the Subsets make (None: no Subset)
    label: str = "target"  # what dataset[i] returns beside the image: "target", or "index" (i itself)
    none_target: Optional[int] = None  # what a None target becomes (timm: -1); None: it is not native


def unwrap_dataset(dataset: Any) -> ImageSource:
    """The ImageFolder/DatasetFolder or timm ImageDataset under any Subsets, as the native path
    reads it; raises Unsupported listing every reason it is not one the pipeline can read (with
    ``source`` set when the dataset is one of them, so its transform can still be checked)."""
    ds, indices = peel_subsets(dataset)
    timm_dataset = _timm_image_dataset()
    reasons: List[str] = []
    none_target = None
    if isinstance(ds, DatasetFolder):
        base, samples = DatasetFolder, ds.samples
        if ds.loader not in (default_loader, pil_loader):
            reasons.append(f"the dataset's loader is {getattr(ds.loader, '__name__', ds.loader)!r}, not torchvision's default image loader")
        if ds.target_transform is not None:
            reasons.append("target_transform is set")
    elif timm_dataset is not None and isinstance(ds, timm_dataset):
        base, none_target = timm_dataset, -1  # timm's __getitem__: a None target is -1
        samples, reasons = _timm_samples(ds)
    else:
        raise Unsupported(f"the dataset is a {type(ds).__name__}, not a torchvision ImageFolder/DatasetFolder or a "
                          "timm ImageDataset (or a Subset of one)")
    label = _getitem_label(type(ds), base)
    if label is None:
        reasons.insert(0, f"{type(ds).__name__} overrides __getitem__")
    if samples and len(ds) != len(samples):
        reasons.append(f"len() of the {type(ds).__name__} is {len(ds)}, but it has {len(samples)} samples")
    source = ImageSource(ds, samples, getattr(ds, "transform", None), indices, label or "target", none_target)
    if reasons:
        e = Unsupported(reasons)
        e.source = source
        raise e
    return source


class _ReturnIndex:
    """DINO's eval_knn.py ReturnIndexDataset (an ImageFolder subclass): the index in place of
    the label."""

    def __getitem__(self, idx):
        img, lab = super(_ReturnIndex, self).__getitem__(idx)
        return img, idx


class _ReturnIndexZeroArg:
    """The same, written with super()."""

    def __getitem__(self, idx):
        img, lab = super().__getitem__(idx)
        return img, idx


# The code flags that matter in a comparison: not __future__ flags (above 0xFFFF), nor
# CO_NESTED (0x10: a class defined inside a function).
_CODE_FLAGS = 0xFFFF & ~0x10


def _getitem_label(cls: type, base: type) -> Optional[str]:
    """What ``cls.__getitem__`` returns beside the image: "target" (``base``'s own), "index"
    (a ReturnIndexDataset: ``base``'s image with the index in place of the label; compared as
    bytecode, names and constants, with ``super`` the builtin starting from the class that
    defines it and ``base.__getitem__`` the method it finds), or None (anything else)."""
    getitem = base.__dict__["__getitem__"]
    if cls.__getitem__ is getitem:
        return "target"
    mro = cls.__mro__
    at = next(i for i, c in enumerate(mro) if "__getitem__" in c.__dict__)
    owner, f = mro[at], mro[at].__dict__["__getitem__"]
    if next((c.__dict__["__getitem__"] for c in mro[at + 1:] if "__getitem__" in c.__dict__), None) is not getitem:
        return None
    code = getattr(f, "__code__", None)
    if code is None or f.__globals__.get("super", super) is not super:
        return None
    for ref in (_ReturnIndex.__getitem__, _ReturnIndexZeroArg.__getitem__):
        r = ref.__code__
        if (code.co_code != r.co_code or code.co_consts != r.co_consts or code.co_argcount != r.co_argcount or
                code.co_kwonlyargcount or (code.co_flags ^ r.co_flags) & _CODE_FLAGS or
                len(code.co_names) != len(r.co_names) or code.co_freevars != r.co_freevars):
            continue
        # Either form has a __class__ cell: the class whose body defined the method.
        same = f.__closure__[0].cell_contents is owner
        if len(r.co_names) == 3:  # super(Name, self): Name is that class too
            same = same and code.co_names[::2] == r.co_names[::2] and f.__globals__.get(code.co_names[1]) is owner
        else:
            same = same and code.co_names == r.co_names
        return "index" if same else None
    return None


# The known transforms. A subclass maps as its base when it inherits how the base transforms
# (forward / __call__ / get_params): its behaviour then is the attributes the mapping reads.
_KNOWN = (T.Compose, T.ToTensor, T.PILToTensor, T.ConvertImageDtype, T.Normalize, T.RandomResizedCrop,
          T.Resize, T.CenterCrop, T.RandomCrop, T.ColorJitter, T.Grayscale, T.Pad, T.GaussianBlur,
          T.RandomHorizontalFlip, T.RandomVerticalFlip, T.RandomGrayscale, T.RandomSolarize, T.RandomInvert,
          T.RandomApply, T.RandomErasing, T.AutoAugment, T.RandAugment, T.TrivialAugmentWide, T.AugMix)
_BEHAVIOUR = ("forward", "__call__", "get_params", "_augmentation_space", "_get_policies", "_sample_dirichlet")


def _kind(t: Any) -> Optional[type]:
    """The known transform class `t` behaves as, or None."""
    cls = type(t)
    for base in cls.__mro__:
        if base in _KNOWN:
            same = all(getattr(cls, m, None) is getattr(base, m, None) for m in _BEHAVIOUR)
            return base if same else None
    return None


# ---- the recipes' own PIL transform classes ----------------------------------------------------
# Self-supervised recipes write small PIL transforms of their own. A class whose __call__ is
# one of these (same bytecode, names and constants; `random` and `ImageFilter` the real
# modules in its globals) maps to the operator beside it, reading its attributes.

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


_RECIPE_CLASSES = [
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
    for ref, to_op in _RECIPE_CLASSES:
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


def _delegate(t: Any) -> Any:
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


def _expand_image_classification(t: Any) -> Optional[List[Any]]:
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


def _flatten(t: Any) -> List[Any]:
    if t is None:
        return []
    if _kind(t) is T.Compose:
        return [x for sub in t.transforms for x in _flatten(sub)]
    if isinstance(t, (list, tuple)):  # a wrapper's list of transforms
        return [x for sub in t for x in _flatten(sub)]
    expanded = _expand_image_classification(t)
    if expanded is not None:
        return expanded
    inner = _delegate(t)
    if inner is not None and inner is not t:
        return _flatten(inner)
    timm = _timm_as_torchvision(t)  # timm's classes as the torchvision transforms they equal
    v1 = _v2_as_v1(t) if timm is None else None  # transforms.v2's as the v1 transforms they equal
    if v1 is not None:
        return [y for x in v1 for y in _flatten(_from(x, t))]
    return [t] if timm is None else [_from(x, t) for x in timm]


def _from(x: Any, original: Any) -> Any:
    """`x`, a stand-in for `original` (what runs in Python when x's place is in a Python tail)."""
    if not isinstance(x, (Unmapped, NativeOp)) and x is not original:
        x._hdl_original = original
    return x


def _original(x: Any) -> Any:
    """What a flattened transform stands for, to run in Python."""
    if isinstance(x, (Unmapped, NativeOp)):
        return x.transform
    return getattr(x, "_hdl_original", x)


_FLIPS = (T.RandomHorizontalFlip, T.RandomVerticalFlip)
_AUTO_AUGMENT = (T.AutoAugment, T.RandAugment, T.TrivialAugmentWide)
_PIL_STAGE = (T.RandomResizedCrop, T.Resize, T.CenterCrop, T.RandomCrop, T.ColorJitter,
              T.Grayscale, T.Pad, T.GaussianBlur, T.RandomGrayscale, T.RandomSolarize, T.RandomInvert,
              T.RandomApply) + _FLIPS + _AUTO_AUGMENT + (T.AugMix,)
# Transforms that draw their own decision to apply (their `p`).
_OWN_P = (T.RandomGrayscale, T.RandomSolarize, T.RandomInvert) + _FLIPS
# What a RandomApply may hold: transforms that keep the image's shape.
_APPLICABLE = (T.ColorJitter, T.GaussianBlur, T.Grayscale, T.RandomApply) + _OWN_P


# Geometry torchvision applies to a uint8 tensor (after PILToTensor / v2's ToImage, before any
# float conversion): crops are the same copies as on PIL images; resizes use torchvision's tensor
# resampling, which is this library's default kernel (docs/PARITY.md: within 1 grey level).
_TENSOR_GEOMETRY = (T.RandomResizedCrop, T.Resize, T.CenterCrop, T.RandomCrop)


class OnTensor:
    """A transform of _TENSOR_GEOMETRY that torchvision applies to a uint8 tensor: mapped with
    the tensor kernel (no Pillow arithmetic) and the tensor path's antialias."""

    def __init__(self, t: Any):
        self.t = t

    def antialias(self) -> bool:
        """torchvision's antialias for this resize of a tensor: the transform's, or its default
        (False for tensors before torchvision 0.17, True since)."""
        a = getattr(self.t, "antialias", None)
        if isinstance(a, bool):
            return a
        major, minor = (int(x) for x in torchvision.__version__.split(".")[:2])
        return (major, minor) >= (0, 17)


def _apply_items(t: Any) -> List[Any]:
    """The transforms of a RandomApply, flattened."""
    return _flatten(list(t.transforms))


def _apply_reasons(t: Any, shared: bool = False) -> List[str]:
    """Why `t` cannot run with a probability of being applied: its own RandomApply, or (shared)
    one draw common to the several transforms of an enclosing RandomApply."""
    if isinstance(t, Unmapped):
        return [t.reason]
    kind, name = _kind(t), type(t).__name__
    op = recipe_op(t)
    if op is not None:  # a recipe's own class: shared only when it has no probability of its own
        if shared and float(op[1].get("probability", 1.0)) < 1:
            return [f"{name} (p < 1) inside a RandomApply of several transforms (two draws) has no native mapping"]
        return []
    if kind not in _APPLICABLE:
        return [f"transform {name} inside RandomApply has no native mapping"]
    if shared and kind in _OWN_P + (T.RandomApply,) and t.p < 1:
        return [f"{name}(p={t.p}) inside a RandomApply of several transforms (two draws) has no native mapping"]
    if kind is T.Grayscale and t.num_output_channels != 3:
        return [f"RandomApply of Grayscale(num_output_channels={t.num_output_channels}) changes the channel "
                "count of some samples only"]
    if kind is T.RandomApply:
        items = _apply_items(t)
        if len(items) == 1:
            return _apply_reasons(items[0], shared)
        if any(_kind(i) in _FLIPS for i in items):
            return ["a flip inside a RandomApply of several transforms has no native mapping"]
        return [r for i in items for r in _apply_reasons(i, True)]
    return []


def _split(transform: Any):
    """(PIL-stage transforms, float output, tensor-stage Normalize or None, tensor-stage
    RandomErasings); raises Unsupported listing every transform that has no native mapping."""
    ts = _flatten(transform)
    pil: List[Any] = []
    to_tensor = None
    float_out = False
    normalize = None
    erasing: List[Any] = []
    reasons: List[str] = []
    for t in ts:
        if isinstance(t, Unmapped):
            reasons.append(t.reason)
            continue
        kind = _kind(t)
        name = type(t).__name__
        if to_tensor is None:
            if kind is T.ToTensor:
                to_tensor, float_out = "ToTensor", True
            elif kind is T.PILToTensor:
                to_tensor = "PILToTensor"
            elif kind in _PIL_STAGE or recipe_op(t) is not None:
                if kind is T.RandomApply:
                    reasons += _apply_reasons(t)
                pil.append(t)
            else:
                reasons.append(f"transform {name} has no native mapping")
        elif kind in _FLIPS:
            # Flips commute with the per-pixel conversion, and with RandomErasing in law (a
            # uniformly placed rectangle mirrored is a uniformly placed rectangle).
            pil.append(t)
        elif kind in _TENSOR_GEOMETRY and not float_out and normalize is None and not erasing:
            pil.append(OnTensor(t))  # still uint8 (PILToTensor), nothing per-pixel after it yet
        elif kind is T.RandomErasing:
            if not float_out:
                reasons.append("RandomErasing on a uint8 tensor (only float tensors are native)")
            erasing.append(t)
        elif kind is T.ConvertImageDtype:
            if t.dtype != torch.float32:
                reasons.append(f"ConvertImageDtype({t.dtype}) (only torch.float32 is native)")
            float_out = True
        elif kind is T.Normalize and normalize is None:
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


def _fused_decoder(pil: List[Any]) -> Tuple[Dict[str, Any], int]:
    """image_decoder arguments taking over the leading transforms, and how many it took."""
    args: Dict[str, Any] = {"output_type": "rgb"}
    if _has("image_decoder", "dct_scaling"):
        args["dct_scaling"] = False  # exact: same pixels as decode + crop + resize
    fused = _has("image_decoder", "random_crop", "scale", "ratio", "resize", "max_size",
                 "interpolation", "antialias", "center_crop")
    i = 0
    if not fused or not pil:
        return args, 0
    tensor = isinstance(pil[0], OnTensor)
    first = pil[0].t if tensor else pil[0]
    if _kind(first) is T.RandomResizedCrop:
        args.update(random_crop="resized", scale=list(first.scale), ratio=list(first.ratio), resize=_hw(first.size))
        if tensor:  # torchvision's tensor resampling: the default kernel, the transform's antialias
            args.update(antialias=pil[0].antialias(), interpolation=_interp(first.interpolation, "RandomResizedCrop"))
        else:  # PIL images are always resampled with antialiasing
            args.update(antialias=True, **_rrc_interpolation(first, "image_decoder"))
        i = 1
    elif _kind(first) is T.Resize:
        size = [first.size] if isinstance(first.size, int) else list(first.size)
        args.update(resize=size, interpolation=_interp(first.interpolation, "Resize"))
        if tensor:
            args["antialias"] = pil[0].antialias()
        else:
            args.update(antialias=True, **_pillow("image_decoder", first.interpolation))
        if first.max_size:
            args["max_size"] = int(first.max_size)
        i = 1
    nxt = lambda j: pil[j].t if isinstance(pil[j], OnTensor) else pil[j]
    if i < len(pil) and _kind(nxt(i)) is T.CenterCrop:  # the same copy on a PIL image and a tensor
        args["center_crop"] = _hw(nxt(i).size)
        i += 1
    return args, i


def _pillow(op: str, interpolation: Any, random_window: bool = False) -> Dict[str, Any]:
    """The resize-family operators' ``pillow`` argument for a resize of PIL images (every resize
    this module maps: before ToTensor / PILToTensor, from the default PIL loader), which
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
    if (random_window and name == "bilinear") or not _has(op, "pillow"):
        return {}
    return {"pillow": True}


def _rrc_interpolation(t: Any, op: str) -> Dict[str, Any]:
    """`op`'s interpolation arguments for RandomResizedCrop `t`: its filter, or with timm's
    interpolation='random' (RandomInterpolationCrop) the filters each image's is drawn from;
    Pillow's arithmetic where _pillow asks for it for any of them."""
    modes = getattr(t, "interpolations", None)
    if not modes:
        return {"interpolation": _interp(t.interpolation, "RandomResizedCrop"),
                **_pillow(op, t.interpolation, random_window=True)}
    _require(op, "random_interpolation")
    names = [_interp(m, "RandomResizedCrop") for m in modes]
    args: Dict[str, Any] = {"interpolation": names[0], "random_interpolation": names}
    for m in modes:
        args.update(_pillow(op, m, random_window=True))
    return args


def _times(p: Any, q: float) -> Any:
    """The probability of applying a transform of probability `q` inside one of probability `p`
    (a float, or a shared 0/1 coin_flip, which _apply_reasons allows only with q 0 or 1)."""
    if q >= 1:
        return p
    if isinstance(p, DataNode):
        if q <= 0:
            return 0.0
        raise Unsupported("a random transform inside a RandomApply of several transforms (two draws)")
    return float(p) * float(q)


def _prob(op: str, p: Any) -> Dict[str, Any]:
    """`op`'s probability argument for `p` (none when it always applies)."""
    if not isinstance(p, DataNode) and p >= 1:
        return {}
    _require(op, "probability")
    return {"probability": p if isinstance(p, DataNode) else float(p)}


def _map_one(t: Any, x: DataNode, p: Any = 1.0) -> DataNode:
    """`t` applied to x with probability `p` (a float or a shared coin_flip; only transforms
    that keep the image's shape take one below 1, see _apply_reasons)."""
    if isinstance(t, OnTensor):
        return _map_on_tensor(t, x)
    op = recipe_op(t)
    if op is not None:
        name, args = op
        _require(name, *args)
        if isinstance(p, DataNode):  # the shared draw of a RandomApply of several transforms
            if float(args.get("probability", 1.0)) < 1:
                raise Unsupported(f"{type(t).__name__} (p < 1) inside a RandomApply of several transforms has no native mapping")
            _require(name, "probability")
            args = dict(args, probability=p)
        elif p < 1:  # RandomApply([recipe class], p): the probabilities multiply
            _require(name, "probability")
            args = dict(args, probability=float(p) * float(args.get("probability", 1.0)))
        return getattr(fn, name)(x, **args)
    kind = _kind(t)
    if kind is T.RandomApply:
        items, q = _apply_items(t), float(t.p)
        if len(items) == 1:
            return _map_one(items[0], x, _times(p, q))
        p = _times(p, q)
        if isinstance(p, DataNode) or p >= 1 or p <= 0:
            pass  # already shared, always, or never: no draw of its own
        else:
            _require("coin_flip")
            p = fn.coin_flip(probability=float(p))  # one draw for all of them
        for item in items:
            x = _map_one(item, x, p)
        return x
    if kind is T.RandomGrayscale:  # as many channels as the input
        _require("grayscale")
        return fn.grayscale(x, num_output_channels=0, **_prob("grayscale", _times(p, float(t.p))))
    if kind in (T.RandomSolarize, T.RandomInvert):  # invert = solarize at threshold 0
        _require("solarize")
        threshold = float(t.threshold) if kind is T.RandomSolarize else 0.0
        return fn.solarize(x, threshold=threshold, **_prob("solarize", _times(p, float(t.p))))
    if kind is T.RandomResizedCrop:
        _require("random_resized_crop")
        return fn.random_resized_crop(x, size=_hw(t.size), scale=list(t.scale), ratio=list(t.ratio), antialias=True,
                                      **_rrc_interpolation(t, "random_resized_crop"))
    if kind is T.Resize:
        _require("resize")
        size = [t.size] if isinstance(t.size, int) else list(t.size)
        return fn.resize(x, size=size, max_size=int(t.max_size or 0),
                         interpolation=_interp(t.interpolation, "Resize"), antialias=True, **_pillow("resize", t.interpolation))
    if kind is T.CenterCrop:
        _require("crop")
        return fn.crop(x, crop=_hw(t.size))
    if kind is T.RandomCrop:
        # torchvision: pad by `padding`, then pad_if_needed's shortfall, then a uniform window.
        _require("random_crop")
        pads = [] if t.padding is None else ([t.padding] if isinstance(t.padding, int) else [int(p) for p in t.padding])
        fills = [float(t.fill)] if isinstance(t.fill, (int, float)) else [float(f) for f in t.fill]
        return fn.random_crop(x, size=_hw(t.size), padding=pads, pad_if_needed=bool(t.pad_if_needed),
                              padding_mode=t.padding_mode, fill=fills)
    if kind in _FLIPS:
        _require("random_flip")
        direction = "horizontal" if kind is T.RandomHorizontalFlip else "vertical"
        return fn.random_flip(x, probability=float(_times(p, float(t.p))), direction=direction)
    if kind is T.ColorJitter:
        _require("color_jitter")
        rng = lambda v: [] if v is None else [float(v[0]), float(v[1])]
        return fn.color_jitter(x, brightness=rng(t.brightness), contrast=rng(t.contrast),
                               saturation=rng(t.saturation), hue=rng(t.hue), **_prob("color_jitter", p))
    if kind is T.Grayscale:
        _require("grayscale")
        return fn.grayscale(x, num_output_channels=int(t.num_output_channels), **_prob("grayscale", p))
    if kind is T.Pad:
        return _pad(t.padding, t.fill, t.padding_mode, x)
    if kind is T.GaussianBlur:
        _require("gaussian_blur")
        return fn.gaussian_blur(x, kernel_size=[int(k) for k in t.kernel_size],
                                sigma=[float(s) for s in t.sigma], **_prob("gaussian_blur", p))
    if kind in _AUTO_AUGMENT:  # never inside a RandomApply (_apply_reasons): p is 1
        _require("auto_augment")
        return fn.auto_augment(x, **_auto_augment_args(t))
    if kind is T.AugMix:
        _require("augmix")
        return fn.augmix(x, **_augmix_args(t))
    raise Unsupported(f"transform {type(t).__name__} has no native mapping")


def _map_on_tensor(o: OnTensor, x: DataNode) -> DataNode:
    """Geometry torchvision applies to a uint8 tensor: resizes with the default (tensor) kernel
    and the tensor path's antialias; crops as on PIL images (the same copies)."""
    t, kind = o.t, _kind(o.t)
    if kind is T.RandomResizedCrop:
        _require("random_resized_crop")
        return fn.random_resized_crop(x, size=_hw(t.size), scale=list(t.scale), ratio=list(t.ratio),
                                      antialias=o.antialias(), interpolation=_interp(t.interpolation, "RandomResizedCrop"))
    if kind is T.Resize:
        _require("resize")
        size = [t.size] if isinstance(t.size, int) else list(t.size)
        return fn.resize(x, size=size, max_size=int(t.max_size or 0), interpolation=_interp(t.interpolation, "Resize"),
                         antialias=o.antialias())
    return _map_one(t, x)


def _auto_augment_args(t: Any) -> Dict[str, Any]:
    """auto_augment's arguments for an AutoAugment / RandAugment / TrivialAugmentWide (PIL
    images: Pillow's nearest, bilinear or bicubic transforms, fill int() per channel); raises Unsupported
    for what the operator cannot do or torchvision would refuse."""
    kind, name = _kind(t), type(t).__name__
    interp = _interp(t.interpolation, name)
    if interp not in ("nearest", "bilinear", "bicubic"):
        raise Unsupported(f"{name}: interpolation {interp!r} (Pillow's transforms have nearest, bilinear and bicubic)")
    fill = t.fill
    fills = [] if fill is None else [float(fill)] if isinstance(fill, (int, float)) else [float(f) for f in fill]
    if fill is not None and not isinstance(fill, (int, float)) and len(fills) != 3:
        raise Unsupported(f"{name}: fill {fill!r} has {len(fills)} values for RGB images (torchvision raises)")
    if not all(0 <= f <= 255 for f in fills):
        raise Unsupported(f"{name}: fill {fill!r} outside [0, 255]")
    args: Dict[str, Any] = {"interpolation": interp, "fill": fills}
    if kind is T.AutoAugment:
        if t.policies != t._get_policies(t.policy):
            raise Unsupported(f"{name}: its policies differ from torchvision's {t.policy.value} policy")
        args["policy"] = "auto_augment_" + t.policy.value
        return args
    bins = int(t.num_magnitude_bins)
    if bins < 2:
        raise Unsupported(f"{name}: num_magnitude_bins={bins} (at least 2 are native)")
    args.update(num_magnitude_bins=bins)
    if kind is T.TrivialAugmentWide:
        args["policy"] = "trivial_augment_wide"
        return args
    magnitude = int(t.magnitude) + (bins if int(t.magnitude) < 0 else 0)  # a tensor index: -1 is the last bin
    if not (0 <= magnitude < bins) or not (0 <= int(t.num_ops) <= 64):
        raise Unsupported(f"{name}: magnitude={t.magnitude}, num_ops={t.num_ops} (magnitude must index the "
                          f"{bins} bins, num_ops at most 64)")
    args.update(policy="rand_augment", num_ops=int(t.num_ops), magnitude=magnitude)
    return args


def _augmix_args(t: Any) -> Dict[str, Any]:
    """augmix's arguments for an AugMix (its ops are torchvision's tensor ops: nearest or
    bilinear, fill None or floats); raises Unsupported for what the operator cannot do or
    torchvision would refuse."""
    interp = _interp(t.interpolation, "AugMix")
    if interp not in ("nearest", "bilinear"):
        raise Unsupported(f"AugMix: interpolation {interp!r} (its tensor ops have nearest and bilinear)")
    fill = t.fill
    fills = [] if fill is None else [float(fill)] if isinstance(fill, (int, float)) else [float(f) for f in fill]
    if len(fills) not in (0, 1, 3) or not all(0 <= f <= 255 for f in fills):
        raise Unsupported(f"AugMix: fill {fill!r} (None, a number or 3 values in [0, 255] are native)")
    if not (1 <= int(t.mixture_width) <= 64 and int(t.chain_depth) <= 64 and 1e-3 <= float(t.alpha) <= 1e6):
        raise Unsupported(f"AugMix: mixture_width={t.mixture_width}, chain_depth={t.chain_depth}, alpha={t.alpha} "
                          "(native: 1 to 64 chains of at most 64 ops, alpha in [1e-3, 1e6])")
    return {"severity": int(t.severity), "mixture_width": int(t.mixture_width), "chain_depth": int(t.chain_depth),
            "alpha": float(t.alpha), "all_ops": bool(t.all_ops), "interpolation": interp, "fill": fills}


def _erasing(t: Any, x: DataNode) -> DataNode:
    """Tensor-stage RandomErasing on the float32 CHW images (inplace makes no difference here)."""
    _require("random_erasing")
    v = t.value
    if isinstance(v, str):  # "random": torchvision accepts no other string
        values: Dict[str, Any] = {"random_values": True}
    else:
        values = {"value": [float(v)] if isinstance(v, (int, float)) else [float(a) for a in v]}
    if isinstance(t, CountedErasing) and (t.count != (1, 1) or t.random_color):  # timm's
        _require("random_erasing", "count", "random_color")
        values["count"] = list(t.count)
        if t.random_color:
            values = {"random_color": True, "count": list(t.count)}
    return fn.random_erasing(x, probability=float(t.p), scale=[float(s) for s in t.scale],
                             ratio=[float(r) for r in t.ratio], **values)


def _pad(padding: Any, fill: Any, mode: str, x: DataNode) -> DataNode:
    _require("pad")
    pads = [padding] if isinstance(padding, int) else [int(p) for p in padding]
    fills = [float(fill)] if isinstance(fill, (int, float)) else [float(f) for f in fill]
    return fn.pad(x, padding=pads, padding_mode=mode, fill=fills)


# ---- a Python tail: what cannot be mapped runs per sample inside the pipeline ---------------

_TAIL_DTYPES = {"ToTensor": "float32", "MaybeToTensor": "float32", "PILToTensor": "uint8", "MaybePILToTensor": "uint8",
                "ToNumpy": "uint8"}


class PythonTail:
    """Transforms that cannot be mapped, run by a python_function per sample on the CHW uint8
    image before them (as a PIL image); returns a PIL image as HWC uint8 (`dtype` "uint8",
    native transforms follow) or the tensor the transforms end in (`dtype` its dtype). Python's,
    numpy's and torch's global RNGs are seeded from the sample's own draw (the pipeline's
    stream: a seed repeats the batches) and restored after, so the training script's random
    numbers do not move. Calls are serialised (they share the global RNGs); the native stages
    around them run in parallel."""

    def __init__(self, transforms: List[Any], dtype: str, returns_image: bool, reasons: List[str]):
        self.transforms, self.dtype, self.returns_image, self.reasons = transforms, dtype, returns_image, reasons
        self._lock = threading.Lock()

    def names(self) -> List[str]:
        return [type(t).__name__ for t in self.transforms]

    def __call__(self, chw: Any, seed: Any) -> Any:
        hwc = np.ascontiguousarray(np.asarray(chw).transpose(1, 2, 0))
        img = Image.fromarray(hwc[:, :, 0] if hwc.shape[2] == 1 else hwc)
        s = int(np.asarray(seed).reshape(-1)[0])
        with self._lock:
            py_state, np_state = random.getstate(), np.random.get_state()
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(s)
                random.seed(s)
                np.random.seed(s)
                try:
                    for t in self.transforms:
                        img = t(img)
                finally:
                    random.setstate(py_state)
                    np.random.set_state(np_state)
        if not self.returns_image:
            got = str(getattr(img, "dtype", type(img).__name__)).replace("torch.", "")
            if got != self.dtype:
                raise TypeError(f"{', '.join(self.names())} returned {got} where {self.dtype} was expected (the "
                                "dtype of the last tensor conversion among them)")
            return img
        if not isinstance(img, Image.Image) or img.mode not in ("RGB", "L"):
            raise TypeError(f"{', '.join(self.names())} returned {type(img).__name__} "
                            f"{getattr(img, 'mode', '')}where an RGB or L PIL image was expected")
        out = np.asarray(img)
        return out[:, :, None] if out.ndim == 2 else out


def _tail_dtype(tail: List[Any]) -> Optional[str]:
    """The dtype a tail of transforms ends in (its last tensor conversion), or None if none."""
    dtype = None
    for t in tail:
        name = type(t).__name__
        if isinstance(t, T.ConvertImageDtype):
            dtype = {torch.float32: "float32", torch.uint8: "uint8", torch.float64: "float64"}.get(t.dtype)
        elif name in _TAIL_DTYPES:
            dtype = _TAIL_DTYPES[name]
        # Anything else is taken to keep the dtype (PythonTail checks it on every result).
    return dtype


def _try_plan(transforms: List[Any], fuse: bool, jpeg_index_mb: Optional[int]):
    try:
        return _plan_view(T.Compose(transforms), fuse, jpeg_index_mb)
    except Unsupported:
        return None


def _plan_with_tail(transform: Any, fuse: bool, jpeg_index_mb: Optional[int], blockers: List[str]):
    """_plan_view's plan for a transform some of which cannot be mapped: the longest leading run
    of mappable PIL-stage transforms natively (ending in a uint8 CHW image), then in Python
    (PythonTail) the transforms up to the last that cannot be mapped, then natively again the
    longest mappable rest (a tensor conversion, Normalize, RandomErasing, ...) when there is
    one, else everything after the native start in Python. Raises Unsupported (`blockers`,
    and why no Python tail) when that cannot work."""
    if not _has("python_function") or not _has("random_uniform"):
        raise Unsupported(blockers)
    ts = _flatten(transform)
    j = 0
    while j < len(ts) and not isinstance(ts[j], Unmapped) and (_kind(ts[j]) in _PIL_STAGE or recipe_op(ts[j]) is not None):
        j += 1
    head = None
    while head is None:  # the longest prefix that plans (a RandomApply it cannot take, an argument it refuses)
        head = _try_plan(ts[:j] + [T.PILToTensor()], fuse, jpeg_index_mb)
        if head is None:
            if j == 0:
                raise Unsupported(blockers)
            j -= 1
    dec_args, before = head
    # The shortest Python middle after which the rest plans natively (it then gets a PIL image).
    rest = None
    m = j + 1
    while m < len(ts) and _tail_dtype([_original(t) for t in ts[j:m]]) is None:
        rest = _try_plan(ts[m:], False, None)
        if rest is not None:
            break
        m += 1
    if rest is None:
        m = len(ts)
    middle = [_original(t) for t in ts[j:m]]
    if rest is not None:
        run = PythonTail(middle, "uint8", True, list(blockers))
        layout = "HWC"
    else:
        dtype = _tail_dtype(middle)
        if dtype is None:
            raise Unsupported(blockers + ["no Python tail either: its output dtype is not known (no ToTensor / "
                                          "PILToTensor / ConvertImageDtype after the transforms that cannot be mapped)"])
        run = PythonTail(middle, dtype, False, list(blockers))
        layout = "CHW"

    def wire(x: DataNode) -> DataNode:
        seed = fn.random_uniform(range=[0.0, 16777216.0])  # exact integers in float32
        y = fn.python_function(before(x), seed, function=run, dtype=run.dtype, output_layout=layout)
        return rest[1](y) if rest is not None else y

    wire.python_tail = run
    return dec_args, wire


def _plan_view(transform: Any, fuse: bool, jpeg_index_mb: Optional[int], tail: bool = False):
    """(image_decoder arguments, a function wiring the rest onto decoded images) for one
    view. With `fuse`, the leading crop/resize go into the decoder (it then decodes only the
    region it needs); without, the decoder decodes whole images for several views to share.
    With `tail`, transforms that cannot be mapped run in Python (_plan_with_tail)."""
    try:
        pil, float_out, normalize, erasing = _split(transform)
    except Unsupported as e:
        if not tail:
            raise
        return _plan_with_tail(transform, fuse, jpeg_index_mb, e.reasons)
    dec_args, taken = _fused_decoder(pil if fuse else [])
    if jpeg_index_mb is not None and _has("image_decoder", "index_cache_mb"):
        dec_args["index_cache_mb"] = int(jpeg_index_mb)
    rest = pil[taken:]
    for t in rest:  # fail now rather than at iteration
        if _kind(t) is T.Pad:
            _require("pad")
        if _kind(t) is T.RandomResizedCrop:
            _require("random_resized_crop")
        op = recipe_op(t)
        if op is not None:
            _require(op[0], *op[1])
        if _kind(t) in _AUTO_AUGMENT:
            _require("auto_augment", *_auto_augment_args(t))
        if _kind(t) is T.AugMix:
            _require("augmix", *_augmix_args(t))
    _require("crop_mirror_normalize" if float_out else "transpose")
    if erasing:
        _require("random_erasing")

    # A horizontal flip last before the tensor conversion becomes crop_mirror_normalize's mirror,
    # drawn by a coin_flip of the same probability: one pass over the pixels instead of two.
    mirror_p = None
    if float_out and rest and _kind(rest[-1]) is T.RandomHorizontalFlip and _has("crop_mirror_normalize", "mirror"):
        mirror_p = float(rest[-1].p)
        rest = rest[:-1]

    def after(x: DataNode) -> DataNode:
        for t in rest:
            x = _map_one(t, x)
        if float_out:
            extra = {} if mirror_p is None else {"mirror": fn.coin_flip(probability=mirror_p)}
            mean = list(normalize.mean) if normalize is not None and not isinstance(normalize.mean, (int, float)) else ([float(normalize.mean)] if normalize is not None else [])
            std = list(normalize.std) if normalize is not None and not isinstance(normalize.std, (int, float)) else ([float(normalize.std)] if normalize is not None else [])
            x = fn.crop_mirror_normalize(x, mean=[float(m) for m in mean], std=[float(s) for s in std],
                                         scale=255.0, dtype="float32", output_layout="CHW", **extra)
            for t in erasing:
                x = _erasing(t, x)
            return x
        return fn.transpose(x, output_layout="CHW")

    return dec_args, after


class _NotTraceable(Exception):
    pass


class _View:
    """What a traced wrapper got back from one of its transforms."""

    def __init__(self, transform: Any):
        self.transform = transform


class _Recorder:
    """Stands in for a wrapper's transform while its __call__ is traced."""

    def __init__(self, transform: Any, image: Any):
        self.transform, self.image = transform, image

    def __call__(self, x: Any) -> _View:
        if x is not self.image:  # a view of a view, or of something else: not a plain fan-out
            raise _NotTraceable()
        return _View(self.transform)


# Names a multi-view wrapper's __call__ may use besides its own attributes.
_VIEW_BUILTINS = {"append", "extend", "range", "len", "list", "tuple"}


def views_of(t: Any) -> Optional[List[Any]]:
    """The per-view transforms of a multi-view wrapper (MoCo's TwoCropsTransform, DINO's
    multi-crop, SimCLR's pairs: a __call__ returning a list of its transforms applied to the
    same image), or None. Found by running __call__ once with its transforms replaced by
    recorders; only a __call__ that uses nothing but its own transforms, integer attributes
    and list building qualifies, so it cannot draw random numbers or branch on the image."""
    cls = type(t)
    call = getattr(cls, "__call__", None)
    code = getattr(call, "__code__", None)
    attrs = getattr(t, "__dict__", None)
    if code is None or attrs is None or cls.__module__.startswith(("torch.", "torchvision.")):
        return None
    if code.co_argcount != 2 or code.co_kwonlyargcount or code.co_flags & 0x0C:  # *args, **kwargs
        return None
    names = set(code.co_names)
    transforms = {n for n in names if n in attrs and callable(attrs[n])}
    counts = {n for n in names if n in attrs and type(attrs[n]) is int}
    if not transforms or names - transforms - counts - _VIEW_BUILTINS:
        return None
    image = object()
    traced = copy.copy(t)
    for n in transforms:
        traced.__dict__[n] = _Recorder(attrs[n], image)
    try:
        out = call(traced, image)
    except Exception:  # anything but list building on recorders
        return None
    if not isinstance(out, (list, tuple)) or len(out) < 2 or not all(isinstance(v, _View) for v in out):
        return None
    return [v.transform for v in out]


def image_graph(transform: Any, jpeg_index_mb: Optional[int] = None,
                python_tail: bool = False) -> Callable[[DataNode], List[DataNode]]:
    """A function wiring ``transform`` onto encoded bytes, checked now (raises Unsupported
    listing every blocker), returning one node per view (one, or a multi-view wrapper's).
    ``jpeg_index_mb``: the decoder's index_cache_mb (None: its default). ``python_tail``:
    transforms that cannot be mapped run in Python inside the pipeline (PythonTail) after the
    mappable ones before them; the function's ``python_tails`` lists them (empty: none)."""
    _require("image_decoder")
    views = views_of(transform)
    if views is None:
        dec_args, after = _plan_view(transform, True, jpeg_index_mb, python_tail)
        wire = lambda encoded: [after(fn.image_decoder(encoded, **dec_args))]  # noqa: E731
        wire.python_tails = [after.python_tail] if hasattr(after, "python_tail") else []
        return wire
    plans, reasons = [], []
    for v in views:
        try:
            plans.append(_plan_view(v, False, None, python_tail))
        except Unsupported as e:
            reasons += [r for r in e.reasons if r not in reasons]
    if reasons:
        raise Unsupported(reasons)
    dec_args = plans[0][0]

    def wire(encoded: DataNode) -> List[DataNode]:
        x = fn.image_decoder(encoded, **dec_args)  # decoded once, shared by the views
        return [after(x) for _, after in plans]

    wire.python_tails = [after.python_tail for _, after in plans if hasattr(after, "python_tail")]
    return wire


def _post_collate_ref_closure():
    f = None

    def collate(batch):
        return f(*default_collate(batch))

    return collate


def _post_collate_ref_global(batch):
    return _post_collate_fn(*default_collate(batch))


class PostCollate(NamedTuple):
    """What the native path does with default_collate's batch for a collate_fn."""

    f: Callable[..., Any]  # called as f(*batch); its result is the loader's batch
    seeded: bool  # f draws random numbers: torch's and Python's RNGs are seeded per batch around it


def _fast_collate_batch(images: torch.Tensor, targets: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """timm's fast_collate's batch, from default_collate's of the same uint8 images and int
    targets: the same tensors (uint8 NCHW, int64), as a tuple."""
    return images, targets


def _fast_collate_reasons(transform: Any, python_tail: bool) -> List[str]:
    """Why fast_collate's batch of samples made by `transform` is not default_collate's as a
    tuple. A transform with no native mapping throughout gets none without `python_tail`
    (image_graph lists why), and one with it: the Python tail's dtype would decide the batch's."""
    if views_of(transform) is not None:
        return ["collate_fn timm fast_collate with a transform returning several views (it batches one uint8 image "
                "per sample, and fails on a list)"]
    try:
        float_out = _split(transform)[1]
    except Unsupported:
        if python_tail:
            return ["collate_fn timm fast_collate with transforms run in Python (python_tail=True): only a transform "
                    "mapped natively throughout is known to end in the uint8 images fast_collate batches"]
        return []
    if float_out:
        return ["collate_fn timm fast_collate of float images (it copies them into a uint8 tensor, truncating; "
                "uint8 images from PILToTensor or timm's ToNumpy / MaybePILToTensor are native)"]
    return []


def post_collate(collate_fn: Any, source: Optional[ImageSource], python_tail: bool = False) -> Optional[PostCollate]:
    """What the native path does for a collate_fn other than default_collate, or None when it
    cannot. ``f`` when ``collate_fn`` is ``lambda batch: f(*default_collate(batch))`` (a def or a
    lambda, ``f`` a closure variable or a global: the references' and timm-free recipes' way
    to apply MixUp/CutMix): the native path makes default_collate's batch itself, so it calls f
    on it. timm's ``fast_collate`` of the single uint8 image an image `source`'s transform makes
    per sample: default_collate's batch as a tuple (raises Unsupported for anything else, and
    for a transform that would need a Python tail: ``python_tail``, the loader's argument)."""
    if is_fast_collate(collate_fn):
        if source is None:
            raise Unsupported("collate_fn timm fast_collate is native for image datasets only")
        reasons = _fast_collate_reasons(source.transform, python_tail)
        if reasons:
            raise Unsupported(reasons)
        return PostCollate(_fast_collate_batch, seeded=False)
    code = getattr(collate_fn, "__code__", None)
    if code is None or code.co_argcount != 1 or code.co_kwonlyargcount or code.co_flags & 0x0C:
        return None
    glob = getattr(collate_fn, "__globals__", {})
    for ref in (_post_collate_ref_closure().__code__, _post_collate_ref_global.__code__):
        if code.co_code != ref.co_code or len(code.co_names) != len(ref.co_names):
            continue
        if glob.get(code.co_names[-1]) is not default_collate:
            return None
        if code.co_freevars:
            if len(code.co_freevars) != 1 or not collate_fn.__closure__:
                return None
            f = collate_fn.__closure__[0].cell_contents
        else:
            f = glob.get(code.co_names[0])
        return PostCollate(f, seeded=True) if callable(f) else None
    return None
