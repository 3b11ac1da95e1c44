"""What the dataset registry (_datasets.py) answers for a dataset: how the native path reads
it (``NativeDataset``), or every reason it cannot."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, List, NamedTuple, Optional, Tuple

import numpy as np
from torch.utils.data import Subset


def peel_subsets(dataset: Any) -> Tuple[Any, Optional[List[int]]]:
    """The dataset under any (nested) Subsets, and the index map they make (None: no Subset)."""
    indices: Optional[List[int]] = None
    ds = dataset
    while isinstance(ds, Subset):
        idx = [int(i) for i in ds.indices]
        indices = idx if indices is None else [idx[i] for i in indices]
        ds = ds.dataset
    return ds, indices


class Options(NamedTuple):
    """The loader's options a dataset kind reads."""

    jpeg_index_mb: Optional[int]  # image_decoder's index_cache_mb
    python_tail: bool  # transforms with no native mapping may run in Python inside the pipeline
    blocked: bool  # the loader has found other blockers already (no Python tail, no hint then)


def _no_check(pipe: Any) -> Optional[str]:
    return None


@dataclass
class NativeDataset:
    """How the native path reads one dataset. ``reasons`` non-empty: it cannot (the other
    fields then are what could be worked out, e.g. ``source`` for checking a collate_fn)."""

    kind: Optional[str]  # the registry entry that claimed it (None: none did)
    dataset: Any = None  # the dataset under any Subsets
    reasons: List[str] = field(default_factory=list)
    # The pipeline's sample list, once: entry i is what dataset[i] reads (through any Subset),
    # so the sampler's indices are the pipeline's sample indices. Raises Unsupported for a
    # sample it cannot list.
    samples: Optional[Callable[[], Any]] = None
    # (sample list, last_batch, stage) -> (data, labels): the reader's nodes.
    read: Optional[Callable[..., Tuple[Any, Any]]] = None
    wire: Optional[Callable[[Any], List[Any]]] = None  # images: encoded bytes -> one node per view
    video: Any = None  # videos: the _NativeVideo (video.py): the reader's arguments and what follows it
    multi_view: bool = False  # batches are [[view_1, ..., view_n], labels]
    source: Any = None  # images: the ImageSource (_image_datasets.py), for checking a collate_fn
    order_map: Optional[np.ndarray] = None  # loader dataset index -> pipeline sample (None: the same)
    tail_hint: Optional[List[str]] = None  # what python_tail=True would run in Python
    tail_blockers: int = 0  # how many of `reasons` a Python tail would take
    verify: Callable[[Any], Optional[str]] = _no_check  # why the built pipeline disagrees with the dataset
    # An iterable dataset (no sampler): what gives each epoch's order on this rank (its
    # ``order(num_samples, loader_seed, epoch, consumed)``); None: the loader's batch sampler.
    iterable: Any = None
    notes: List[str] = field(default_factory=list)  # differences from torch's DataLoader worth a notice
