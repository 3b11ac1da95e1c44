"""Habana MediaPipe's video operator names, as ``fn.ReadVideoDatasetFromDir`` and
``fn.VideoDecoder``, mapped onto ``video_reader`` (which reads *and* decodes clips).

They keep MediaPipe's calling convention: construct with keyword arguments (in a MediaPipe's
``__init__``), call in ``definegraph()``:

    class VideoPipe(MediaPipe):
        def __init__(self, root):
            super().__init__(device="cpu", batch_size=8, num_threads=4, seed=42)
            self.reader = fn.ReadVideoDatasetFromDir(dir=root, format="mp4", frames_per_clip=16,
                                                     sampler="RANDOM", shuffle=True)
            self.decode = fn.VideoDecoder(resize=[171, 128], frames_per_clip=16)   # [width, height]
        def definegraph(self):
            videos, labels, resample = self.reader()
            return self.decode(videos, resample), labels                          # [8, 16, 128, 171, 3]

Arguments are checked at construction; anything without a faithful mapping raises
TypeError / ValueError saying so, rather than being ignored.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _C, _ops
from ._graph import DataNode, current_pipeline

__all__ = ["ReadVideoDatasetFromDir", "VideoDecoder"]


def _name(v: Any) -> str:
    """An enum member (``rs.RANDOM_SAMPLER``, ``it.RGB_I``) or a string, as an upper-case name."""
    return str(getattr(v, "name", v)).upper()


_SAMPLERS = {"RANDOM": "random", "RANDOM_SAMPLER": "random", "UNIFORM": "uniform", "UNIFORM_SAMPLER": "uniform",
             "CONTIGUOUS": "contiguous", "CONTIGUOUS_SAMPLER": "contiguous"}
_LAST_BATCH = {"DROP": "drop", "PARTIAL": "partial", "PAD": "pad", "CYCLIC": "fill", "NONE": "partial"}
_RESAMPLING = {"BI_LINEAR": "bilinear", "BILINEAR": "bilinear", "LINEAR": "bilinear", "BICUBIC": "bicubic",
               "NEAREST": "nearest", "LANCZOS": "lanczos", "BOX": "box"}
_RANDOM_CROP = {"NO_RANDOM_CROP": None, "RANDOMIZED_AREA_AND_ASPECT_RATIO_CROP": "resized"}


class ReadVideoDatasetFromDir:
    """Habana's ``fn.ReadVideoDatasetFromDir`` (and ``ReadVideoDatasetFromDirGen``'s arguments)
    as ``video_reader``. Calling it returns ``(videos, labels, resample_idx)``: ``videos`` is
    video_reader's decoded clips ([T, H, W, C] uint8; ``fn.VideoDecoder`` sets their size),
    ``labels`` int64, ``resample_idx`` the clips' frame indices [T] int64.

    Mapping (MediaPipe -> video_reader):
      dir -> file_root; format ("mp4" or a list) -> extensions; frames_per_clip ->
      frames_per_clip; stride -> step (frames between a clip's frames); step_between_clips ->
      clip_stride; clips_per_video -> clips_per_video; target_frame_rate -> frame_rate (0: the
      video's own frames); sampler RANDOM / UNIFORM / CONTIGUOUS (or ``*_SAMPLER``, any case,
      or an enum with that name) -> random / uniform / contiguous; shuffle -> shuffle;
      num_slices / slice_index -> num_shards / shard_id (slice k takes every num_slices-th
      clip: is_modulo_slice=True); last_batch_strategy DROP / PARTIAL / PAD / CYCLIC ->
      last_batch drop / partial / pad / fill, or drop_remainder -> drop, pad_remainder -> pad
      (default: partial); file_list + class_list + file_classes -> a file list (label = the
      class's index in class_list).
    Differences: ``seed`` is the pipeline's (every random stream is keyed by it): a seed here
      must equal the enclosing pipeline's, else ValueError. Shuffling is global, then sliced
      (as with slice_once=False). Labels are int64 whatever ``label_dtype``.
      ``fixed_clip_mode=True``, ``start_frame_index != 0`` and ``is_modulo_slice=False`` have
      no mapping (ValueError). ``device`` is accepted and ignored: the reader decodes on the
      pipeline's CPU threads.
    """

    def __init__(self, dir: Optional[str] = None, format: Any = "mp4", seed: Optional[int] = None,
                 drop_remainder: bool = False, pad_remainder: bool = False, label_dtype: Any = None,
                 num_slices: int = 1, slice_index: int = 0, file_list: Optional[Sequence[str]] = None,
                 class_list: Optional[Sequence[str]] = None, file_classes: Optional[Sequence[str]] = None,
                 frames_per_clip: int = 1, clips_per_video: int = 1, target_frame_rate: float = 0,
                 step_between_clips: int = 1, stride: int = 1, sampler: Any = "RANDOM",
                 fixed_clip_mode: bool = False, start_frame_index: int = 0, shuffle: bool = True,
                 last_batch_strategy: Any = None, slice_once: bool = True, is_modulo_slice: bool = True,
                 device: Optional[str] = None, name: Optional[str] = None):
        if fixed_clip_mode:
            raise ValueError("ReadVideoDatasetFromDir(fixed_clip_mode=True) has no mapping onto video_reader")
        if start_frame_index:
            raise ValueError("ReadVideoDatasetFromDir(start_frame_index != 0) has no mapping onto video_reader")
        if not is_modulo_slice:
            raise ValueError("ReadVideoDatasetFromDir(is_modulo_slice=False): video_reader's shards are modulo slices")
        if _name(sampler) not in _SAMPLERS:
            raise ValueError(f"ReadVideoDatasetFromDir() argument 'sampler' must be RANDOM, UNIFORM or CONTIGUOUS, "
                             f"got {sampler!r}")
        if drop_remainder and pad_remainder:
            raise ValueError("ReadVideoDatasetFromDir(): drop_remainder and pad_remainder exclude each other")
        if last_batch_strategy is not None:
            if _name(last_batch_strategy) not in _LAST_BATCH:
                raise ValueError("ReadVideoDatasetFromDir() argument 'last_batch_strategy' must be DROP, PARTIAL, "
                                 f"PAD or CYCLIC, got {last_batch_strategy!r}")
            last_batch = _LAST_BATCH[_name(last_batch_strategy)]
        else:
            last_batch = "drop" if drop_remainder else "pad" if pad_remainder else "partial"
        formats = [format] if isinstance(format, str) else [str(getattr(f, "value", f)) for f in format]
        extensions = ["." + f.lower().lstrip(".") for f in formats]
        self._seed = seed
        self._files = None
        if file_list:
            if dir is not None:
                raise ValueError("ReadVideoDatasetFromDir(): give dir or file_list, not both")
            if not class_list or not file_classes or len(file_classes) != len(file_list):
                raise ValueError("ReadVideoDatasetFromDir(file_list=...) needs class_list and one file_classes "
                                 "entry per file")
            index = {c: i for i, c in enumerate(class_list)}
            missing = sorted({c for c in file_classes if c not in index})
            if missing:
                raise ValueError(f"ReadVideoDatasetFromDir(): file_classes not in class_list: {missing[:5]}")
            self._files = [(os.path.abspath(p), index[c]) for p, c in zip(file_list, file_classes)]
        elif dir is None:
            raise ValueError("ReadVideoDatasetFromDir() needs dir (class folders of videos) or file_list")
        self._args: Dict[str, Any] = dict(
            file_root=os.fspath(dir) if dir is not None else "/", extensions=extensions,
            sampler=_SAMPLERS[_name(sampler)], frames_per_clip=int(frames_per_clip), step=int(stride),
            clips_per_video=int(clips_per_video), clip_stride=int(step_between_clips),
            frame_rate=float(target_frame_rate or 0), shuffle=bool(shuffle), shard_id=int(slice_index),
            num_shards=int(num_slices), last_batch=last_batch)
        _C.check_args("video_reader", self._args)  # ValueError / TypeError now, naming the argument
        self._name = name

    def __call__(self) -> Tuple[DataNode, DataNode, DataNode]:
        pipe = current_pipeline()
        if self._seed is not None and (pipe is None or int(pipe.seed) != int(self._seed)):
            have = "no enclosing pipeline" if pipe is None else f"the pipeline's seed is {pipe.seed}"
            raise ValueError(f"ReadVideoDatasetFromDir(seed={self._seed}): {have}; give the seed to the "
                             "MediaPipe / Pipeline (seed=...), which keys every random stream")
        args = dict(self._args)
        if self._files is not None:  # in memory, as a typed list: no file on disk
            args.pop("file_root", None)
            args["files"] = [p for p, _ in self._files]
            args["labels"] = [label for _, label in self._files]
        frames, labels, indices, _ = _ops.video_reader(name=self._name, **args)
        return frames, labels, indices


class VideoDecoder:
    """Habana's ``fn.VideoDecoder``: called as ``decoder(videos, resample_idx)`` on the outputs
    of a ``ReadVideoDatasetFromDir``, it sets how that reader decodes (video_reader decodes
    the clips it reads) and returns the clips.

    Mapping: resize [width, height] -> resize [height, width] ([0, 0]: the video's size);
    resampling_mode BI_LINEAR / LINEAR / BICUBIC / NEAREST / LANCZOS / BOX -> interpolation
    (antialiased, as torchvision's); random_crop_type NO_RANDOM_CROP -> none,
    RANDOMIZED_AREA_AND_ASPECT_RATIO_CROP -> random_crop="resized" (``scale``, ``ratio``:
    torchvision's defaults unless given), one window per clip; crop_after_resize [x, y, w, h]
    -> center_crop [h, w] when the window is the centred one (else ValueError); output_format
    RGB_I -> [T, H, W, C] (FHWC), RGB_P -> [T, C, H, W] (crop_mirror_normalize, uint8, CHW);
    frames_per_clip must equal the reader's. max_frame_vid, dpb_size and device are accepted
    and ignored (FFmpeg sizes its own buffers; decoding runs on the CPU threads). A
    ``random_crop`` input tensor has no mapping (TypeError).
    """

    def __init__(self, output_format: Any = "RGB_I", resize: Sequence[int] = (0, 0),
                 crop_after_resize: Sequence[int] = (0, 0, 0, 0), resampling_mode: Any = "BI_LINEAR",
                 random_crop_type: Any = "NO_RANDOM_CROP", frames_per_clip: int = 1, max_frame_vid: int = 1,
                 dpb_size: int = 16, scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0), device: Optional[str] = None,
                 name: Optional[str] = None):
        fmt = _name(output_format)
        if fmt not in ("RGB_I", "RGB_P"):
            raise ValueError(f"VideoDecoder() argument 'output_format' must be RGB_I or RGB_P, got {output_format!r}")
        if _name(resampling_mode) not in _RESAMPLING:
            raise ValueError(f"VideoDecoder() argument 'resampling_mode' must be one of {', '.join(_RESAMPLING)}, "
                             f"got {resampling_mode!r}")
        if _name(random_crop_type) not in _RANDOM_CROP:
            raise ValueError("VideoDecoder() argument 'random_crop_type' must be NO_RANDOM_CROP or "
                             f"RANDOMIZED_AREA_AND_ASPECT_RATIO_CROP, got {random_crop_type!r}")
        size = [int(v) for v in resize]
        if len(size) != 2 or min(size) < 0 or (0 in size and size != [0, 0]):
            raise ValueError(f"VideoDecoder() argument 'resize' must be [width, height] (or [0, 0]), got {resize!r}")
        crop = [int(v) for v in crop_after_resize]
        if len(crop) != 4:
            raise ValueError(f"VideoDecoder() argument 'crop_after_resize' must be [x, y, w, h], got {crop_after_resize!r}")
        args: Dict[str, Any] = {"interpolation": _RESAMPLING[_name(resampling_mode)], "antialias": True}
        if size != [0, 0]:
            args["resize"] = [size[1], size[0]]
        if _RANDOM_CROP[_name(random_crop_type)]:
            if size == [0, 0]:
                raise ValueError("VideoDecoder(random_crop_type=RANDOMIZED_AREA_AND_ASPECT_RATIO_CROP) needs resize")
            args.update(random_crop="resized", scale=[float(s) for s in scale], ratio=[float(r) for r in ratio])
        if crop != [0, 0, 0, 0]:
            x, y, w, h = crop
            # video_reader's center_crop is torchvision CenterCrop's: offsets round((size - crop) / 2).
            if size == [0, 0] or (x, y) != (round((size[0] - w) / 2), round((size[1] - h) / 2)):
                raise ValueError(f"VideoDecoder(crop_after_resize={crop}): only the centred window of the "
                                 "resized frame has a mapping (video_reader's center_crop)")
            args["center_crop"] = [h, w]
        self._args, self._planar = args, fmt == "RGB_P"
        self._frames_per_clip, self._name = int(frames_per_clip), name
        _C.check_args("video_reader", args)

    def __call__(self, input: DataNode, resample_idx: DataNode, random_crop: Any = None) -> DataNode:
        if random_crop is not None:
            raise TypeError("VideoDecoder(): a random_crop input has no mapping; use "
                            "random_crop_type=RANDOMIZED_AREA_AND_ASPECT_RATIO_CROP")
        node = getattr(input, "node", None)
        if (node is None or node.op != "video_reader" or input.index != 0 or getattr(resample_idx, "node", None)
                is not node or resample_idx.index != 2):
            raise TypeError("VideoDecoder() takes the (videos, resample_idx) outputs of one "
                            "ReadVideoDatasetFromDir (video_reader decodes what it reads)")
        if node.args.get("frames_per_clip", 16) != self._frames_per_clip:
            raise ValueError(f"VideoDecoder(frames_per_clip={self._frames_per_clip}) differs from its reader's "
                             f"{node.args.get('frames_per_clip', 16)}")
        if getattr(node, "_decoder_set", False):
            raise ValueError("VideoDecoder(): this reader's decoding is already set by another VideoDecoder")
        node.args = dict(_C.check_args("video_reader", {**node.args, **self._args}))
        node._decoder_set = True
        if self._planar:
            return _ops.crop_mirror_normalize(input, dtype="uint8", output_layout="CHW", name=self._name)
        return input
