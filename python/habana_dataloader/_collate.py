"""Recognising a collate_fn the native path can honour: default_collate followed by a function
of the batch (MixUp / CutMix as the references apply them), or timm's fast_collate."""

from __future__ import annotations

from typing import Any, Callable, List, NamedTuple, Optional, Tuple

import torch
from torch.utils.data._utils.collate import default_collate

from ._chain import split
from ._support import Unsupported
from ._timm_data import is_fast_collate
from ._views import views_of


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
        float_out = split(transform)[1]
    except Unsupported:
        if python_tail:
            return ["collate_fn timm fast_collate with transforms run in Python (python_tail=True): only a transform "
                    "mapped natively throughout is known to end in the uint8 images fast_collate batches"]
        return []
    if float_out:
        return ["collate_fn timm fast_collate of float images (it copies them into a uint8 tensor, truncating; "
                "uint8 images from PILToTensor or timm's ToNumpy / MaybePILToTensor are native)"]
    return []


def post_collate(collate_fn: Any, source: Optional[Any], python_tail: bool = False) -> Optional[PostCollate]:
    """What the native path does for a collate_fn other than default_collate, or None when it
    cannot. ``f`` when ``collate_fn`` is ``lambda batch: f(*default_collate(batch))`` (a def or a
    lambda, ``f`` a closure variable or a global: the references' and timm-free recipes' way
    to apply MixUp/CutMix): the native path makes default_collate's batch itself, so it calls f
    on it. timm's ``fast_collate`` of the single uint8 image an image `source`'s transform
    makes per sample (an ImageSource, _image_datasets.py; None for other datasets):
    default_collate's batch as a tuple (raises Unsupported for anything else, and for a transform that would need a Python
    tail: ``python_tail``, the loader's argument)."""
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
