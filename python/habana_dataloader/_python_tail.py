"""A Python tail: transforms that cannot be mapped run per sample inside the pipeline (a
python_function), between the mappable ones before and after them (HabanaDataLoader's
``python_tail=True``)."""

from __future__ import annotations

import random
import threading
from typing import Any, Callable, List, Optional

import numpy as np
import torch
import torchvision.transforms as T
from PIL import Image

from . import fn
from ._chain import flatten, original, runs_on_pil
from ._graph import DataNode
from ._support import Unmapped, Unsupported, has_op

# The dtype a class of this name makes (torchvision's and timm's conversions, run in Python).
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


def with_tail(transform: Any, fuse: bool, jpeg_index_mb: Optional[int], blockers: List[str],
              view_graph: Callable[..., Any]):
    """view_graph's result for a transform some of which cannot be mapped: the longest leading
    run of mappable PIL-stage transforms natively (ending in a uint8 CHW image), then in Python
    (PythonTail) the transforms up to the last that cannot be mapped, then natively again the
    longest mappable rest (a tensor conversion, Normalize, RandomErasing, ...) when there is
    one, else everything after the native start in Python. Raises Unsupported (`blockers`,
    and why no Python tail) when that cannot work. `view_graph` is _mapping.view_graph."""
    if not has_op("python_function") or not has_op("random_uniform"):
        raise Unsupported(blockers)

    def attempt(transforms: List[Any], fuse: bool, jpeg_index_mb: Optional[int]):
        try:
            return view_graph(T.Compose(transforms), fuse, jpeg_index_mb)
        except Unsupported:
            return None

    ts = flatten(transform)
    j = 0
    while j < len(ts) and not isinstance(ts[j], Unmapped) and runs_on_pil(ts[j]):
        j += 1
    head = None
    while head is None:  # the longest prefix that maps (a RandomApply it cannot take, an argument it refuses)
        head = attempt(ts[:j] + [T.PILToTensor()], fuse, jpeg_index_mb)
        if head is None:
            if j == 0:
                raise Unsupported(blockers)
            j -= 1
    dec_args, before = head
    # The shortest Python middle after which the rest maps natively (it then gets a PIL image).
    rest = None
    m = j + 1
    while m < len(ts) and _tail_dtype([original(t) for t in ts[j:m]]) is None:
        rest = attempt(ts[m:], False, None)
        if rest is not None:
            break
        m += 1
    if rest is None:
        m = len(ts)
    middle = [original(t) for t in ts[j:m]]
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
