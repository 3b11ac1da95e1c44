"""The native mapping of the video datasets: what HabanaDataLoader runs in place of a VideoList
or VideoFolder and its clip transform (video_reader's arguments and the operators after it)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

from ._clip_transforms import ClipEvalTransform, ClipTrainTransform
from ._video_common import _LAYOUTS
from ._video_datasets import VideoList

class _NativeVideo:
    """How HabanaDataLoader runs a VideoFolder: video_reader's arguments and the operators
    after it (``after(frames, stage) -> DataNode``; stage "gpu" puts them on the gpu stage)."""

    def __init__(self, reader_args: Dict[str, Any], after: Callable[[Any], Any]):
        self.reader_args, self.after = reader_args, after


def _same_behaviour(obj: Any, base: type, methods: Sequence[str]) -> bool:
    return all(getattr(type(obj), m, None) is getattr(base, m, None) for m in methods)


def _native_video(folder: VideoList) -> _NativeVideo:
    """The native mapping of ``folder`` (a VideoList or VideoFolder: its clip sampling and
    transform; its entries are ``folder._native_samples()``); raises
    ``_support.Unsupported`` listing every reason there is none."""
    from . import fn
    from ._support import Unsupported

    reasons: List[str] = []
    if not _same_behaviour(folder, VideoList, ("__getitem__", "clip_frames", "clip_location", "__len__", "_positions",
                                               "video_info", "_native_samples")):
        reasons.append(f"{type(folder).__name__} overrides how {type(folder).__mro__[1].__name__} picks or decodes clips")
    args: Dict[str, Any] = {"frames_per_clip": folder.frames_per_clip, "step": folder.step,
                            "sampler": folder.sampler, "clips_per_video": folder.clips_per_video,
                            "clip_stride": folder.clip_stride, "frame_rate": folder.frame_rate or 0.0,
                            "output_type": "rgb"}
    if getattr(folder, "group_clips", False):
        args["group_clips"] = True
    if folder.metadata_cache is not None:  # written at the folder's construction: the reader probes nothing
        args["metadata_cache"] = folder.metadata_cache
    t = folder.transform
    after: Callable[..., Any] = lambda frames, stage="cpu": frames
    if t is None:
        pass
    elif isinstance(t, ClipEvalTransform) and _same_behaviour(t, ClipEvalTransform, ("__call__",)):
        if t.resize is not None:
            args.update(resize=list(t.resize), interpolation=t.interpolation, antialias=t.antialias)
        if t.crop_size is not None:
            args["center_crop"] = list(t.crop_size)

        def after(frames, stage="cpu", t=t):
            return fn.crop_mirror_normalize(frames, mean=t.mean or [], std=t.std or [], scale=255.0,
                                            dtype="float32", output_layout=_LAYOUTS[t.layout], stage=stage)
    elif isinstance(t, ClipTrainTransform) and _same_behaviour(t, ClipTrainTransform, ("__call__", "_rrc_window")):
        geometry = {"interpolation": t.interpolation, "antialias": t.antialias}
        if t.scale is not None:
            args.update(random_crop="resized", scale=list(t.scale), ratio=list(t.ratio),
                        resize=list(t.crop_size), **geometry)
        else:
            args.update(resize=list(t.resize), **geometry)

        def after(frames, stage="cpu", t=t):
            extra: Dict[str, Any] = {}
            if t.scale is None:
                extra.update(crop=list(t.crop_size), crop_pos_x=fn.random_uniform(range=[0.0, 1.0]),
                             crop_pos_y=fn.random_uniform(range=[0.0, 1.0]), crop_pos_bins=True)
            if t.hflip_prob > 0:
                extra["mirror"] = fn.coin_flip(probability=t.hflip_prob)
            return fn.crop_mirror_normalize(frames, mean=t.mean or [], std=t.std or [], scale=255.0,
                                            dtype="float32", output_layout=_LAYOUTS[t.layout], stage=stage,
                                            **extra)
    else:
        reasons.append(f"the {type(folder).__name__}'s transform is a {type(t).__name__}: natively only None, "
                       "ClipTrainTransform and ClipEvalTransform (habana_dataloader.video)")
    if reasons:
        raise Unsupported(reasons)
    return _NativeVideo(args, after)
