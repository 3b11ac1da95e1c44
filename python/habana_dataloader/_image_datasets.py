"""Image datasets the native path reads: torchvision's ImageFolder / DatasetFolder (and DINO's
ReturnIndexDataset), and timm's ImageDataset over a folder (_timm_data.py), each with the
transform it applies (mapped by _mapping.py)."""

from __future__ import annotations

import operator
import os
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from torchvision.datasets import DatasetFolder
from torchvision.datasets.folder import default_loader, pil_loader

from . import _C, fn
from ._mapping import image_graph
from ._native_dataset import NativeDataset, Options
from ._support import Unsupported
from ._timm_data import image_dataset_class as _timm_image_dataset, image_dataset_samples as _timm_samples
from ._views import views_of


@dataclass
class ImageSource:
    """What the native path reads for an image dataset: its files and labels in dataset order."""

    dataset: Any  # the dataset under any Subsets: a DatasetFolder or timm's ImageDataset
    samples: Sequence[Tuple[str, Any]]  # (path, target) per dataset index
    transform: Any
    indices: Optional[List[int]]  # the index map the Subsets make (None: no Subset)
    label: str = "target"  # what dataset[i] returns beside the image: "target", or "index" (i itself)
    none_target: Optional[int] = None  # what a None target becomes (timm: -1); None: it is not native


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


def is_timm_image_dataset(ds: Any) -> bool:
    cls = _timm_image_dataset()
    return cls is not None and isinstance(ds, cls)


def _source(ds: Any, indices: Optional[List[int]], base: type, samples: Sequence[Tuple[str, Any]],
            reasons: List[str], none_target: Optional[int]) -> Tuple[ImageSource, List[str]]:
    label = _getitem_label(type(ds), base)
    if label is None:
        reasons.insert(0, f"{type(ds).__name__} overrides __getitem__")
    if samples and len(ds) != len(samples):
        reasons.append(f"len() of the {type(ds).__name__} is {len(ds)}, but it has {len(samples)} samples")
    return ImageSource(ds, samples, getattr(ds, "transform", None), indices, label or "target", none_target), reasons


def folder_source(ds: Any, indices: Optional[List[int]]) -> Tuple[ImageSource, List[str]]:
    """A torchvision DatasetFolder (ImageFolder) as the native path reads it, and every reason it cannot."""
    reasons: List[str] = []
    if ds.loader not in (default_loader, pil_loader):
        reasons.append(f"the dataset's loader is {getattr(ds.loader, '__name__', ds.loader)!r}, not torchvision's "
                       "default image loader")
    if ds.target_transform is not None:
        reasons.append("target_transform is set")
    return _source(ds, indices, DatasetFolder, ds.samples, reasons, None)


def timm_source(ds: Any, indices: Optional[List[int]]) -> Tuple[ImageSource, List[str]]:
    """A timm ImageDataset as the native path reads it, and every reason it cannot."""
    samples, reasons = _timm_samples(ds)
    return _source(ds, indices, _timm_image_dataset(), samples, list(reasons), -1)  # timm: a None target is -1


def _python_tail_would_take(transform: Any, jpeg_index_mb: Optional[int]) -> Optional[List[str]]:
    """The transforms python_tail=True would run in Python for `transform`, or None when a
    Python tail would not make it native either."""
    try:
        wire = image_graph(transform, jpeg_index_mb=jpeg_index_mb, python_tail=True)
    except Exception:  # a hint only: never in the way of the fallback's own reasons
        return None
    names = [name for tail in getattr(wire, "python_tails", []) for name in tail.names()]
    return names or None


def _sample_list(source: ImageSource) -> "_C.Samples":
    """The pipeline's samples: entry i is the file and label of dataset[i] (through any Subset;
    for a ReturnIndexDataset the label is the index it returns)."""
    paths: List[str] = []
    labels: List[int] = []
    samples = source.samples
    for i in (source.indices if source.indices is not None else range(len(samples))):
        p, label = samples[i]
        if source.label == "index":
            label = i
        elif label is None and source.none_target is not None:
            label = source.none_target
        try:
            label = operator.index(label)
        except TypeError:
            raise Unsupported(f"sample {i} ({p!r}) has the target {label!r}, not an int") from None
        paths.append(os.path.abspath(p))
        labels.append(label)
    return _C.Samples(paths, labels)


def _read_files(samples: Any, last_batch: str, stage: str = "cpu") -> Tuple[Any, Any]:
    return fn.file_reader(files=samples, shuffle=False, last_batch=last_batch)


def image_dataset(kind: str, source: ImageSource, reasons: List[str], opts: Options) -> NativeDataset:
    """The native reading of an image dataset: file_reader over its samples, then its
    transform's graph (or every reason there is none, the transform's included)."""
    data = NativeDataset(kind, source.dataset, list(reasons), samples=lambda: _sample_list(source), read=_read_files,
                         source=source)
    map_transform(data, source.transform, opts)
    return data


def map_transform(data: NativeDataset, transform: Any, opts: Options) -> None:
    """Maps an image dataset's `transform` onto data.wire (the graph after the reader's encoded
    bytes) and data.multi_view, or adds every reason it cannot to data.reasons (with the hint of
    what a Python tail would take when the transform is the only blocker)."""
    blocked = opts.blocked or bool(data.reasons)
    try:
        # A Python tail for what cannot be mapped, unless the loader falls back anyway (then
        # every blocker of the transform is listed too).
        data.wire = image_graph(transform, jpeg_index_mb=opts.jpeg_index_mb, python_tail=opts.python_tail and not blocked)
        data.multi_view = views_of(transform) is not None
    except Unsupported as e:
        if not opts.python_tail and not blocked:  # the transform is the only blocker so far
            data.tail_hint = _python_tail_would_take(transform, opts.jpeg_index_mb)
            data.tail_blockers = len(e.reasons)
        data.reasons += e.reasons
