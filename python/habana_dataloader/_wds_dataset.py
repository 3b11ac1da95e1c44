"""The dataset registry's WebDataset kind: a habana_dataloader.WebDataset over local tar shards,
read natively by the webdataset_reader operator (indexed), its image transform mapped as an
ImageFolder's is.

What runs natively: ``WebDataset(urls, ...)`` with ``.shuffle(n)`` (any number),
``.decode("pil")``, ``.to_tuple(IMAGE, LABEL)`` and ``.map_tuple(transform, None)`` (or no
map_tuple), in that order; IMAGE is a field or "jpg;png"-style alternatives, LABEL a field
holding the class index as text ("cls"). Anything else is a reason to fall back (torch's
DataLoader then runs the WebDataset in Python, as webdataset would).

The epoch's order is this module's, not a sampler's (an IterableDataset has none): every sample
of every shard, in a permutation drawn from (seed, epoch) when the WebDataset shuffles (shards or
samples; an exact global shuffle in place of webdataset's buffers), split across the ranks of a
torch.distributed job as DistributedSampler splits (padded by wrapping, so that every rank gets
the same number of batches). ``epoch_order`` takes how many samples the job had consumed (all
ranks) so that a state saved with one world size resumes with another.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple

import numpy as np

from . import fn
from ._image_datasets import map_transform
from ._native_dataset import NativeDataset, Options
from .wds import WebDataset, reraise_exception


def claims(ds: Any) -> bool:
    return isinstance(ds, WebDataset)


def rank_and_world() -> Tuple[int, int]:
    """This process's rank and the world size: torch.distributed's when it is initialised,
    else RANK / WORLD_SIZE, else (0, 1)."""
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return 0, 1


def epoch_order(num_samples: int, shuffle: bool, seed: int, epoch: int, rank: int, world: int,
                consumed: int = 0) -> np.ndarray:
    """This rank's samples for `epoch`, in order: the epoch's sequence (a permutation from (seed,
    epoch), or 0..n-1) less the first `consumed` (taken by the ranks before a resume), padded by
    wrapping to a multiple of `world` and dealt round-robin, as DistributedSampler deals."""
    if shuffle:
        rng = np.random.Generator(np.random.Philox(key=[seed & (2**64 - 1), epoch & (2**64 - 1)]))
        seq = rng.permutation(num_samples).astype(np.int64)
    else:
        seq = np.arange(num_samples, dtype=np.int64)
    rest = seq[min(consumed, num_samples):]
    if rest.size == 0:
        return rest
    per_rank = -(-rest.size // world)
    padded = np.resize(rest, per_rank * world)  # wraps around, as DistributedSampler pads
    return padded[rank::world]


def _stage_reasons(ds: WebDataset) -> Tuple[List[str], Optional[Tuple[str, str]], Any, bool]:
    """Why the WebDataset's stages cannot run natively (empty: they can), the (image, label)
    fields, the image transform, and whether it shuffles."""
    reasons: List[str] = []
    keys: Optional[Tuple[str, str]] = None
    transform: Any = None
    decoded = mapped = False
    shuffle = ds.shardshuffle > 0
    for stage in ds.stages:
        name, args = stage.name, stage.args
        if name == "shuffle":
            shuffle = True
        elif name == "decode":
            handlers = args["handlers"]
            if list(handlers) != ["pil"] or args["pre"] or args["post"] or args["only"] or args["partial"]:
                reasons.append(f".decode({', '.join(repr(h) for h in handlers)}) is not .decode(\"pil\")")
            elif keys is not None:
                reasons.append(".decode() after .to_tuple()")
            decoded = True
        elif name == "to_tuple":
            k = args["keys"]
            if keys is not None:
                reasons.append(".to_tuple() twice")
            elif len(k) != 2 or not all(isinstance(x, str) for x in k):
                reasons.append(f".to_tuple{tuple(k)!r} is not (image field, label field)")
            else:
                keys = (k[0], k[1])
            if args["handler"] is not reraise_exception:
                reasons.append(".to_tuple(handler=...) is given")
        elif name == "map_tuple":
            fs = args["fs"]
            if keys is None or mapped:
                reasons.append(".map_tuple() before .to_tuple() or twice")
            elif len(fs) not in (1, 2) or (len(fs) == 2 and fs[1] is not None):
                reasons.append(".map_tuple() maps the label (only map_tuple(transform, None) is native)")
            else:
                transform = fs[0]
            if args["handler"] is not reraise_exception:
                reasons.append(".map_tuple(handler=...) is given")
            mapped = True
        else:
            reasons.append(f"the .{name}() stage has no native mapping")
    if keys is None:
        reasons.append("no .to_tuple(image field, label field)")
    elif not decoded and transform is not None:
        reasons.append("the transform gets undecoded bytes (no .decode(\"pil\") before .map_tuple())")
    if ds.nsamples > 0:
        reasons.append(".with_epoch() is set")
    if ds.handler is not reraise_exception:
        reasons.append("WebDataset(handler=...) is given (HabanaDataLoader's on_error decides what a bad sample does)")
    if ds.select_files is not None or ds.rename_files is not None:
        reasons.append("select_files or rename_files is given")
    for url in ds.urls:
        if not url.endswith(".tar") or "://" in url and not url.startswith("file://"):
            reasons.append(f"shard {url!r} is not a local plain .tar (the native reader indexes those)")
            break
    return reasons, keys, transform, shuffle


def read(ds: WebDataset, indices: Optional[List[int]], opts: Options) -> NativeDataset:
    """The native reading of a WebDataset: webdataset_reader over its shards, then its image
    transform's graph (or every reason there is none)."""
    reasons, keys, transform, shuffle = _stage_reasons(ds)
    if indices is not None:
        reasons.append("a Subset of a WebDataset")
    urls = [u[len("file://"):] if u.startswith("file://") else u for u in ds.urls]
    data = NativeDataset("webdataset", ds, reasons, samples=lambda: urls)
    if keys is None:
        return data
    image_field, label_field = keys

    def read_shards(samples: Any, last_batch: str, stage: str = "cpu"):
        encoded, labels, _ = fn.webdataset_reader(urls=samples, field=image_field, label_field=label_field,
                                                  shuffle=False, last_batch=last_batch)
        return encoded, labels

    data.read = read_shards
    data.iterable = _IterableOrder(shuffle, ds)
    data.notes.append("a WebDataset's images are decoded to RGB, as ImageFolder's loader does (webdataset's "
                      "\"pil\" keeps grayscale and CMYK images in their mode)")
    if shuffle:
        data.notes.append("a WebDataset's shuffle is an exact shuffle of every sample per (seed, epoch), in place of "
                          "webdataset's shard and sample buffers")
    map_transform(data, transform, opts)
    return data


class _IterableOrder:
    """What the loader asks of an iterable dataset kind: each epoch's order on this rank."""

    def __init__(self, shuffle: bool, ds: WebDataset):
        self.shuffle = shuffle
        self.dataset_seed = ds.seed if getattr(ds, "seed_given", False) else None

    def seed(self, loader_seed: int, world: int) -> int:
        """The permutation's seed: the WebDataset's seed= when given; else, in a job of several
        ranks, 0 (every rank must draw the same permutation, as DistributedSampler's seed=0);
        else the loader's."""
        if self.dataset_seed is not None:
            return int(self.dataset_seed)
        return 0 if world > 1 else loader_seed

    def order(self, num_samples: int, loader_seed: int, epoch: int, consumed: int = 0,
              rank_world: Optional[Tuple[int, int]] = None) -> np.ndarray:
        rank, world = rank_world if rank_world is not None else rank_and_world()
        return epoch_order(num_samples, self.shuffle, self.seed(loader_seed, world), epoch, rank, world, consumed)
