"""Tracing multi-view transforms: a wrapper whose ``__call__`` returns a list of its
transforms applied to the same image (MoCo's TwoCropsTransform, DINO's multi-crop, SimCLR's
pairs)."""

from __future__ import annotations

import copy
from typing import Any, List, Optional


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
