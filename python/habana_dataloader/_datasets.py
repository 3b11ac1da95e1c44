"""The dataset registry: which datasets HabanaDataLoader reads natively, one entry per kind.

Each ``DatasetKind`` says how to recognise its datasets (``claims``, on the dataset under any
Subsets) and how the native path reads one (``read``: a ``NativeDataset``, _native_dataset.py:
the sample list, the reader's nodes, the graph after them, and every reason it cannot). The
loader asks ``native_dataset`` and has no branch per kind. The entries are an explicit list,
tried in order; to add a kind, write its ``read`` and add one entry (_wds_dataset.py, tar
shards, is the latest).
"""

from __future__ import annotations

from typing import Any, Callable, List, NamedTuple, Optional

import numpy as np
from torchvision.datasets import DatasetFolder

from . import _wds_dataset, fn
from ._image_datasets import folder_source, image_dataset, is_timm_image_dataset, timm_source
from ._native_dataset import NativeDataset, Options, peel_subsets
from ._support import Unsupported
from ._video_datasets import VideoList
from ._video_mapping import _native_video


class DatasetKind(NamedTuple):
    name: str
    what: str  # how a fallback reason names its datasets
    claims: Callable[[Any], bool]  # whether the dataset under any Subsets is one of this kind
    read: Callable[[Any, Optional[List[int]], Options], NativeDataset]  # (dataset, Subset indices, options)


def _videos(ds: Any, indices: Optional[List[int]], opts: Options) -> NativeDataset:
    """A VideoList / VideoFolder: video_reader over its entries (handed over in memory, with
    their segments), its clip transform fused into the reader and crop_mirror_normalize."""
    data = NativeDataset("videos", ds, samples=ds._native_samples)
    try:
        data.video = _native_video(ds)
    except Unsupported as e:
        data.reasons += e.reasons
        return data
    if indices is not None:  # the pipeline's samples are the VideoList's clips; a Subset's indices map onto them
        data.order_map = np.asarray(indices, dtype=np.int64)
    reader_args = data.video.reader_args

    def read(samples: Any, last_batch: str, stage: str = "cpu"):
        frames, labels, _, _ = fn.video_reader(files=samples, shuffle=False, last_batch=last_batch, stage=stage,
                                               **reader_args)
        return frames, labels

    def verify(pipe: Any) -> Optional[str]:  # a safety net: both count with clip_sampler.cc's rules
        clips, expected = pipe.dataset_info()["samples"], len(ds)
        return None if clips == expected else \
            f"video_reader counts {clips} clips where the {type(ds).__name__} has {expected}"

    data.read, data.verify = read, verify
    return data


def _image_folder(ds: Any, indices: Optional[List[int]], opts: Options) -> NativeDataset:
    return image_dataset("image_folder", *folder_source(ds, indices), opts)


def _timm_image_dataset(ds: Any, indices: Optional[List[int]], opts: Options) -> NativeDataset:
    return image_dataset("timm_image_dataset", *timm_source(ds, indices), opts)


DATASET_KINDS: List[DatasetKind] = [
    # VideoList.from_shards too: its entries are "<shard>.tar/<member>" paths, which the
    # pipeline's default file system opens in place (pipeline/readers/tar/shard_member_file.h).
    DatasetKind("videos", "a habana_dataloader VideoFolder/VideoList", lambda ds: isinstance(ds, VideoList), _videos),
    DatasetKind("image_folder", "a torchvision ImageFolder/DatasetFolder", lambda ds: isinstance(ds, DatasetFolder),
                _image_folder),
    DatasetKind("timm_image_dataset", "a timm ImageDataset", is_timm_image_dataset, _timm_image_dataset),
    DatasetKind("webdataset", "a habana_dataloader WebDataset", _wds_dataset.claims, _wds_dataset.read),
]


def native_dataset(dataset: Any, opts: Options) -> NativeDataset:
    """How the native path reads `dataset` (through any Subsets): the first kind claiming it,
    or a NativeDataset whose reasons say that none does."""
    ds, indices = peel_subsets(dataset)
    for kind in DATASET_KINDS:
        if kind.claims(ds):
            return kind.read(ds, indices, opts)
    whats = [k.what for k in DATASET_KINDS]
    return NativeDataset(None, ds, [f"the dataset is a {type(ds).__name__}, not {', '.join(whats[:-1])} or "
                                    f"{whats[-1]} (or a Subset of one)"])
