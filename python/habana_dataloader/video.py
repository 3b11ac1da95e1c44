"""Video: VideoFolder / VideoList datasets and clip transforms that HabanaDataLoader runs natively.

    from habana_dataloader import HabanaDataLoader
    from habana_dataloader.video import VideoFolder, ClipTrainTransform

    ds = VideoFolder("kinetics/train", frames_per_clip=16, step=2, sampler="random",
                     transform=ClipTrainTransform(crop_size=112, resize=(128, 171)))
    loader = HabanaDataLoader(ds, batch_size=32, shuffle=True, num_workers=8, drop_last=True)
    for clips, labels in loader: ...          # [32, 3, 16, 112, 112] float32, [32] int64

``VideoList`` (listed videos, or segments of them: (path, label, start, end); or the videos
of WebDataset tar shards, ``VideoList.from_shards(urls, field, label)``, read in place) and its
subclass ``VideoFolder`` (a class-folder tree) are ordinary map-style torch Datasets (torch's
DataLoader runs them, for comparison or where the native path does not apply): they decode
with ``_C.decode_clip``, the
decoder video_reader uses, and picks clips with the rules of pipeline/decode/clip_sampler.cc
(the timeline comes from the C++ code itself, ``VideoInfo.timeline``). HabanaDataLoader
recognises it and runs ``fn.video_reader`` (+ ``coin_flip`` / ``random_uniform`` +
``crop_mirror_normalize`` for the transforms) on its threads instead.

What is equal between the two paths, and what is not:
- clip indices and frame indices (uniform and contiguous samplers), labels, classes, order;
- pixels: the same decoder; resizes are the same arithmetic (torchvision 0.14's tensor
  antialias resize, float32, rounded to uint8) and normalisation is torchvision's formula, so
  ClipEvalTransform batches agree to within one uint8 step (1/255/std) where a resized value
  lies at a rounding boundary (in practice they are equal; tests/python/test_video.py checks);
- random draws (the random sampler's clip starts, crop windows, flips) have the same laws but
  not the same values: the torch path draws from torch's RNG (the global one, seeded per
  worker by torch's DataLoader, or a per-clip generator with ``seed=``), the native path from
  the pipeline's seeded streams.

The module is the public face; the code is in _video_datasets (VideoList, VideoFolder,
GroupedClipSampler), _clip_transforms (the transforms), _video_mapping (the native mapping) and
_video_common (what they share).
"""

from __future__ import annotations

from ._clip_transforms import ClipEvalTransform, ClipTrainTransform
from ._video_common import KINETICS_MEAN, KINETICS_STD, VIDEO_EXTENSIONS
from ._video_datasets import GroupedClipSampler, VideoFolder, VideoList

__all__ = ["VideoList", "VideoFolder", "GroupedClipSampler", "ClipTrainTransform", "ClipEvalTransform", "KINETICS_MEAN",
           "KINETICS_STD", "VIDEO_EXTENSIONS"]
