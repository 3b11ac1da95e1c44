"""The dataset registry's WebDataset kind: a habana_dataloader.WebDataset over tar shards (on local
disk, or http(s):// and s3:// URLs, through the local cache of WebDataset(cache_dir=...) when
given), read natively by the webdataset_reader operator (indexed), its image transform mapped
as an ImageFolder's is.

What runs natively: ``WebDataset(urls, ...)`` with ``.shuffle(n)`` (any number),
``.decode("pil")``, ``.to_tuple(IMAGE, LABEL)`` and ``.map_tuple(transform, None)`` (or no
map_tuple), in that order; IMAGE is a field or "jpg;png"-style alternatives, LABEL a field
holding the class index as text ("cls"). Anything else is a reason to fall back (torch's
DataLoader then runs the WebDataset in Python, as webdataset would). A video field (mp4, avi,
...) is such a reason: a WebDataset yields whole videos as webdataset does; for native clips of
videos in shards, ``VideoList.from_shards(urls, field, label)`` (video.py) reads the members
where they lie, through video_reader.

The epoch's order is this module's, not a sampler's (an IterableDataset has none): every sample
of every shard, in a permutation drawn from (seed, epoch) when the WebDataset shuffles (shards or
samples; an exact global shuffle in place of webdataset's buffers), split across the ranks of a
torch.distributed job as DistributedSampler splits (padded by wrapping, so that every rank gets
the same number of batches). ``epoch_order`` takes how many samples the job had consumed (all
ranks) so that a state saved with one world size resumes with another.

Streaming (``native_mode="streaming"``, or "auto" with compressed shards such as .tar.gz): the
reader's own order instead (webdataset_reader's streaming mode, pipeline/readers/shard_stream.h):
the shards shuffled per (seed, epoch) when the WebDataset shuffles, cut into contiguous per-rank
ranges of their counted samples (equal counts, padded; each sample once per epoch), each read
front to back through a buffer of ``.shuffle(n)``'s n samples. ``with_epoch(n)`` makes it n
samples per rank without counting (reading starts at once; shards split whole, rank::world, and
read again as needed). Resuming mid-epoch replays each rank's stream: the same world size only.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple

import numpy as np

from . import fn
from ._image_datasets import map_transform
from ._native_dataset import NativeDataset, Options
from ._video_shards import _VIDEO_FIELDS
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


_COMPRESSED = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar.zst")


def streams(ds: WebDataset) -> bool:
    """Whether the native reader streams the shards (front to back, shuffled shards and a
    bounded buffer) rather than indexing them: native_mode "streaming", or "auto" with a
    compressed shard (those are streamed only)."""
    mode = getattr(ds, "native_mode", "auto")
    if mode != "auto":
        return mode == "streaming"
    return any(u.lower().endswith(_COMPRESSED) for u in ds.urls)


def _stage_reasons(ds: WebDataset) -> Tuple[List[str], Optional[Tuple[str, str]], Any, bool, int]:
    """Why the WebDataset's stages cannot run natively (empty: they can), the (image, label)
    fields, the image transform, whether it shuffles, and its sample buffer (.shuffle(n)'s n,
    0 without; the streaming mode's shuffle_buffer)."""
    reasons: List[str] = []
    keys: Optional[Tuple[str, str]] = None
    transform: Any = None
    decoded = mapped = False
    shuffle = ds.shardshuffle > 0
    buffer = 0
    stream = streams(ds)
    for stage in ds.stages:
        name, args = stage.name, stage.args
        if name == "shuffle":
            shuffle = True
            buffer = max(buffer, int(args["size"]))
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
                if any(f.strip().lower() in _VIDEO_FIELDS for f in keys[0].split(";")):
                    reasons.append(f"field {keys[0]!r} is a video: a WebDataset yields whole videos (as webdataset); "
                                   "for native clips use habana_dataloader.VideoList.from_shards(urls, "
                                   f"field={keys[0]!r}, label={keys[1]!r}, frames_per_clip=..., ...)")
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
    if ds.nsamples > 0 and not stream:
        reasons.append(".with_epoch() is set (native_mode=\"streaming\" takes it as the samples per rank)")
    if ds.repetitions != 1 and not (stream and ds.nsamples > 0):  # with_epoch repeats the shards
        reasons.append(".repeat() is set")
    if ds.handler is not reraise_exception:
        reasons.append("WebDataset(handler=...) is given (HabanaDataLoader's on_error decides what a bad sample does)")
    if ds.select_files is not None or ds.rename_files is not None:
        reasons.append("select_files or rename_files is given")
    for url in ds.urls:
        remote = url.startswith(("http://", "https://", "s3://"))  # read (and cached) by the C++ reader
        if "://" in url and not url.startswith("file://") and not remote:
            reasons.append(f"shard {url!r} is not a local file, http(s):// or s3://")
            break
        if not url.endswith(".tar") and not (stream and url.lower().endswith(_COMPRESSED)):
            reasons.append(f"shard {url!r} is not a .tar (indexed) nor, in streaming mode, a compressed tar "
                           f"({', '.join(_COMPRESSED)})" if stream else
                           f"shard {url!r} is not a plain .tar (the native reader indexes those; "
                           f"native_mode=\"streaming\" reads compressed ones)")
            break
    return reasons, keys, transform, shuffle, buffer


def read(ds: WebDataset, indices: Optional[List[int]], opts: Options) -> NativeDataset:
    """The native reading of a WebDataset: webdataset_reader over its shards, then its image
    transform's graph (or every reason there is none)."""
    reasons, keys, transform, shuffle, buffer = _stage_reasons(ds)
    stream = streams(ds)
    if indices is not None:
        reasons.append("a Subset of a WebDataset")
    urls = [u[len("file://"):] if u.startswith("file://") else u for u in ds.urls]
    data = NativeDataset("webdataset", ds, reasons, samples=lambda: urls)
    if keys is None:
        return data
    image_field, label_field = keys

    order = _IterableOrder(shuffle, ds, stream)

    def read_shards(samples: Any, last_batch: str, stage: str = "cpu", seed: int = 0):
        if not stream:
            encoded, labels, _ = fn.webdataset_reader(urls=samples, field=image_field, label_field=label_field,
                                                      shuffle=False, last_batch=last_batch)
            return encoded, labels
        # Streaming: the reader splits the shards across the ranks and shuffles (shards, then a
        # buffer of .shuffle(n)'s n samples; shardshuffle alone: shards only); every rank gets
        # as many samples (padded), counted first unless with_epoch gave the rank's number.
        rank, world = rank_and_world()
        encoded, labels, _ = fn.webdataset_reader(
            urls=samples, field=image_field, label_field=label_field, mode="streaming", shuffle=shuffle,
            shuffle_buffer=buffer if buffer > 0 else 1, seed=order.seed(seed, world), shard_id=rank,
            num_shards=world, pad_shards=world > 1, epoch_samples=max(ds.nsamples, 0), last_batch=last_batch)
        return encoded, labels

    data.read = read_shards
    data.iterable = order
    data.notes.append("a WebDataset's images are decoded to RGB, as ImageFolder's loader does (webdataset's "
                      "\"pil\" keeps grayscale and CMYK images in their mode)")
    if stream:
        data.notes.append("a streamed WebDataset's shards are split across the ranks as contiguous ranges of the "
                          "samples of the shuffled shards (equal counts, each sample once per epoch), not "
                          "webdataset's whole shards per rank")
    elif shuffle:
        data.notes.append("a WebDataset's shuffle is an exact shuffle of every sample per (seed, epoch), in place of "
                          "webdataset's shard and sample buffers")
    map_transform(data, transform, opts)
    return data


class _IterableOrder:
    """What the loader asks of an iterable dataset kind: each epoch's order on this rank."""

    def __init__(self, shuffle: bool, ds: WebDataset, stream: bool = False):
        self.shuffle = shuffle
        self.stream = stream
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
        if self.stream:
            # The reader's own order: its num_samples are this rank's stream positions, split and
            # shuffled by the reader. A resume replays the epoch's stream on each rank, which
            # needs the same world size.
            if consumed:
                raise ValueError("a streamed WebDataset (native_mode \"streaming\" or compressed shards) resumes "
                                 "mid-epoch only with the world size it was saved with (each rank replays its own "
                                 "stream); use plain .tar shards (indexed) for an elastic resume")
            return np.arange(num_samples, dtype=np.int64)
        return epoch_order(num_samples, self.shuffle, self.seed(loader_seed, world), epoch, rank, world, consumed)
