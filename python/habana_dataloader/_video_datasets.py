"""VideoList, VideoFolder and GroupedClipSampler: the video datasets (their public face and the
paths' comparison: habana_dataloader.video)."""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch.utils.data import Dataset
from torchvision.datasets.folder import find_classes, make_dataset

from . import _C
from ._video_common import _SAMPLERS, _SEED_MASK, VIDEO_EXTENSIONS, _data_error

_LIST_DEFAULTS: Dict[str, Any] = dict(frames_per_clip=16, step=1, sampler="random", clips_per_video=1, clip_stride=1,
                                      frame_rate=None, transform=None, seed=None, metadata_cache=None,
                                      probe_threads=None, cache_videos=1024, group_clips=False)
_ClipSource = Union[Tuple[Union[str, os.PathLike], int], Tuple[Union[str, os.PathLike], int, float, Optional[float]]]


class VideoList(Dataset):
    """Clips of listed videos, or of segments of videos, as a torch map-style Dataset.

    ``samples``: ``(path, label)`` tuples (whole videos), or ``(path, label, start, end)``
    tuples (segments, all entries alike: Something-Something / Charades / AVA-style
    annotations), ``start`` and ``end`` in seconds from the video's first frame (``end``
    None: the video's end); paths relative to ``root`` when given (else as given). A video
    may be listed several times, with different segments and labels; its metadata is read
    once. ``VideoList.from_file_list`` reads a text list with the readers' parser.

    ``samples`` is then ``[(path, label)]`` (paths joined with ``root``), ``targets`` the
    labels, ``segments`` ``[(start, end)]`` or None. Each item is a clip: ``dataset[i]`` is
    ``(clip, label)``, ``clip`` a uint8 tensor [T, H, W, C] (RGB, rotation applied), or
    ``transform(clip)``.

    A video's timeline is its frames in presentation order or, with ``frame_rate``, instants
    1/frame_rate apart by timestamp (torchvision VideoClips' frame_rate resampling); with a
    segment, only the positions whose time lies in [start, end). A clip is
    ``frames_per_clip`` positions ``step`` apart (0: the whole video or segment); span S =
    (frames_per_clip - 1) * step + 1. Clips, as video_reader makes them:

    Every video is probed at construction (in parallel, ``probe_threads``; free with a
    ``metadata_cache``), as video_reader does when it prepares: a video shorter than one clip
    gives no clip (torchvision's VideoClips), is left out of ``len`` and the clip indices, is
    listed in ``videos_too_short`` and named in one ``RuntimeWarning``; when no video has a
    clip, construction raises ``habana_dataloader.DataError`` naming the longest and the
    shortest.

    - ``sampler="random"``: ``clips_per_video`` clips per entry (``len`` = entries with clips *
      clips_per_video; clip i is clip i % clips_per_video of the (i // clips_per_video)-th),
      each starting uniformly in [0, L - S], drawn anew at every ``__getitem__``: from torch's
      global RNG (which torch's DataLoader seeds per worker from its base seed, so
      ``torch.manual_seed`` reproduces a run), or with ``seed=`` from a generator seeded by
      (seed, epoch, i) (call ``set_epoch`` every epoch for new draws);
    - ``sampler="uniform"``: ``clips_per_video`` starts floor(linspace(0, L - S, K)), as
      torchvision's UniformClipSampler (the first clip for K = 1);
    - ``group_clips=True`` (random, uniform): an entry's clips are one group, in time order:
      random draws the entry's K starts together and sorts them, clip k being the k-th
      earliest (with ``seed=``, from a generator seeded by (seed, epoch, entry), so every clip
      of the entry sees the same draw; without, each ``__getitem__`` draws the K anew from
      torch's global RNG). HabanaDataLoader's native reader (video_reader ``group_clips``)
      then also keeps each entry's clips adjacent in its shuffled epoch and decodes them in
      one pass (torchcodec's ``clips_at_random_indices``) when the loader's order keeps them
      adjacent: pass ``sampler=GroupedClipSampler(dataset)`` (entries shuffled, each entry's
      clips in order; torch's own ``shuffle=True`` shuffles clips, not entries);
    - ``sampler="contiguous"``: every clip, starts 0, clip_stride, 2 * clip_stride, ... (VideoClips'
      clips with frames_between_clips = clip_stride); a video that cannot be read, or a bad
      segment, counts one clip, whose ``__getitem__`` raises with the reason, as
      video_reader does; a video or segment shorter than a clip has none.

    A segment shorter than a clip (random, uniform), a bad segment (end not after start, negative
    start, starting at or past the video's end, no frame inside), or a video that cannot be
    read raises ``habana_dataloader.DataError`` (a RuntimeError) naming the file (and the
    segment and entry). The decoded metadata of the last ``cache_videos`` videos is kept per
    process (one probe per video, not per clip).

    ``metadata_cache``: video_reader's metadata cache file (the same format and keys, the
    paths relative to ``root``): every video's metadata is read at construction (whatever the
    sampler; probing in parallel only what the file lacks or what changed) and the file saved,
    so that a later run, and HabanaDataLoader's native reader (which is given the same file),
    probe nothing. Worker processes read the file themselves and do not write it.
    """

    def __init__(self, samples: Sequence[_ClipSource], frames_per_clip: int = 16, step: int = 1,
                 sampler: str = "random", clips_per_video: int = 1, clip_stride: int = 1,
                 frame_rate: Optional[float] = None, transform: Optional[Callable] = None, seed: Optional[int] = None,
                 *, root: Optional[Union[str, os.PathLike]] = None,
                 metadata_cache: Optional[Union[str, os.PathLike]] = None, probe_threads: Optional[int] = None,
                 cache_videos: int = 1024, group_clips: bool = False):
        name = type(self).__name__
        self.root = os.fspath(root) if root is not None else ""
        keys: List[str] = []
        labels: List[int] = []
        segments: List[Tuple[float, Optional[float]]] = []
        kinds = set()
        for i, entry in enumerate(samples):
            if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 4):
                raise TypeError(f"{name}() samples[{i}]: expected (path, label) or (path, label, start, end), "
                                f"got {entry!r}")
            kinds.add(len(entry))
            path = os.fspath(entry[0])
            label = entry[1]
            if isinstance(label, bool) or not isinstance(label, (int, np.integer)):
                raise TypeError(f"{name}() samples[{i}]: the label must be an int, got {label!r}")
            keys.append(path)
            labels.append(int(label))
            if len(entry) == 4:
                segments.append(_segment(entry[2], entry[3], f"{name}() samples[{i}]"))
        if len(kinds) > 1:
            raise ValueError(f"{name}(): samples mix (path, label) and (path, label, start, end) entries")
        self._setup(keys, labels, segments if 4 in kinds else None, None, None, frames_per_clip=frames_per_clip,
                    step=step, sampler=sampler, clips_per_video=clips_per_video, clip_stride=clip_stride,
                    frame_rate=frame_rate, transform=transform, seed=seed, metadata_cache=metadata_cache,
                    probe_threads=probe_threads, cache_videos=cache_videos, group_clips=group_clips)

    @classmethod
    def from_file_list(cls, file_list: Union[str, os.PathLike], root: Optional[Union[str, os.PathLike]] = None,
                       segments: bool = False, **kwargs: Any) -> "VideoList":
        """A VideoList of a text file list, parsed as video_reader parses it: "path label"
        lines, or with ``segments=True`` "path label start end" lines (video_reader's
        ``file_list_format="path label start end"``; end "-": the video's end). Paths are
        relative to ``root`` (default: the list's folder). Errors name the line."""
        unknown = sorted(set(kwargs) - set(_LIST_DEFAULTS))
        if unknown:
            raise TypeError(f"{cls.__name__}.from_file_list() got unexpected keyword argument(s) {', '.join(unknown)}")
        fmt = "path label start end" if segments else "path label"
        listed = _C.Samples.from_file_list(os.fspath(file_list), os.fspath(root) if root is not None else "", fmt)
        n = len(listed)
        ds = cls.__new__(cls)
        ds.root = listed.root
        ds._setup([listed.relative_path(i) for i in range(n)], [listed.label(i) for i in range(n)],
                  [tuple(listed.segment(i)) for i in range(n)] if segments else None, None,
                  [listed.source(i) for i in range(n)], **{**_LIST_DEFAULTS, **kwargs})
        return ds

    @classmethod
    def from_shards(cls, urls: Any, field: Optional[str] = None, label: Optional[str] = "cls",
                    **kwargs: Any) -> "VideoList":
        """A VideoList of the videos stored in WebDataset tar shards (as ``write_shards`` /
        ``hdl-shards`` write a video list or folder): one entry per sample, in shard order, then
        member order.

        ``urls``: webdataset's shard specs (``"train-{000000..000099}.tar"``, "::"-joined specs,
        or a list of specs); plain ``.tar`` shards on a local file system (a video is read with
        seeks, so compressed shards cannot be). ``field``: the video's field, webdataset style:
        ``"mp4"``, or alternatives ``"mp4;avi;webm"`` (the first a sample has); None (default):
        the sample's one field among ``VIDEO_EXTENSIONS``. ``label``: the field holding the
        class as decimal text (``cls``, as webdataset's ``to_tuple("mp4", "cls")``); None: every
        label 0. Other keyword arguments are VideoList's (frames_per_clip, sampler, transform,
        ...).

        Each entry's path is ``"<shard>/<member name>"`` ("train-000000.tar/n01/v7.mp4"), which
        the pipeline (and this dataset's torch path) opens as a window onto the member inside
        the shard (pipeline/readers/tar/shard_member_file.h), so clips, labels and order are the
        ones of a VideoList over the same files on disk. Member offsets come from each shard's
        index (the ``.idx`` sidecar, built and saved on first use when missing or stale), so no
        open scans a shard. A sample without the video or label field, or a label that is not
        an integer, raises ``habana_dataloader.DataError`` naming the shard and the key."""
        if issubclass(cls, VideoFolder):
            raise TypeError("VideoFolder.from_shards(): use VideoList.from_shards (shards hold no class folders)")
        unknown = sorted(set(kwargs) - set(_LIST_DEFAULTS))
        if unknown:
            raise TypeError(f"{cls.__name__}.from_shards() got unexpected keyword argument(s) {', '.join(unknown)}")
        from ._video_shards import shard_entries
        keys, labels, sources = shard_entries(urls, field, label, f"{cls.__name__}.from_shards()")
        ds = cls.__new__(cls)
        ds.root = ""
        ds._setup(keys, labels, None, None, sources, **{**_LIST_DEFAULTS, **kwargs})
        return ds

    def _setup(self, keys: List[str], labels: List[int], segments: Optional[List[Tuple[float, Optional[float]]]],
               paths: Optional[List[str]], sources: Optional[List[str]], *, frames_per_clip: int, step: int,
               sampler: str, clips_per_video: int, clip_stride: int, frame_rate: Optional[float],
               transform: Optional[Callable], seed: Optional[int], metadata_cache: Optional[Union[str, os.PathLike]],
               probe_threads: Optional[int], cache_videos: int, group_clips: bool = False) -> None:
        """Shared construction: `keys` are the paths relative to self.root (what video_reader
        is given), `paths` the full paths (default: root joined with each key), `sources`
        where each entry was listed (default: samples[i])."""
        name = type(self).__name__
        for arg, v, lo in (("frames_per_clip", frames_per_clip, 0), ("step", step, 1),
                           ("clips_per_video", clips_per_video, 1), ("clip_stride", clip_stride, 1),
                           ("cache_videos", cache_videos, 0)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name}() argument '{arg}' must be int, got {type(v).__name__}")
            if v < lo:
                raise ValueError(f"{name}() argument '{arg}' must be >= {lo}, got {v}")
        if sampler not in _SAMPLERS:
            raise ValueError(f"{name}() argument 'sampler' must be one of {', '.join(_SAMPLERS)}, got {sampler!r}")
        if frame_rate is not None and not (isinstance(frame_rate, (int, float)) and frame_rate > 0):
            raise ValueError(f"{name}() argument 'frame_rate' must be None or > 0, got {frame_rate!r}")
        if frames_per_clip == 0 and sampler != "contiguous" and clips_per_video != 1:
            raise ValueError(f"{name}(): frames_per_clip 0 (the whole video) takes clips_per_video 1")
        if not isinstance(group_clips, bool):
            raise TypeError(f"{name}() argument 'group_clips' must be bool, got {type(group_clips).__name__}")
        if group_clips and sampler == "contiguous":
            raise ValueError(f"{name}(): group_clips takes the random or uniform sampler (contiguous clips of a "
                             "video are already adjacent)")
        self.group_clips = group_clips
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"{name}() argument 'seed' must be None or an int >= 0, got {seed!r}")
        self.frames_per_clip, self.step, self.sampler = frames_per_clip, step, sampler
        self.clips_per_video, self.clip_stride = clips_per_video, clip_stride
        self.frame_rate = float(frame_rate) if frame_rate is not None else None
        self.transform, self.seed, self.epoch = transform, seed, 0
        self.cache_videos = cache_videos
        if paths is None:
            paths = [os.path.join(self.root, k) if self.root else k for k in keys]
        self.samples: List[Tuple[str, int]] = list(zip(paths, labels))
        self.targets = list(labels)
        self.segments = segments
        self._keys = keys
        self._sources = sources  # where each entry was listed (from_file_list), for messages
        self._cache: "OrderedDict[str, Any]" = OrderedDict()  # path -> _C.VideoInfo
        self._lock = threading.Lock()
        self._offsets: Optional[np.ndarray] = None  # the first clip of each entry, and the total
        self.metadata_cache = os.fspath(metadata_cache) if metadata_cache is not None else None
        self._meta: Optional[Any] = None  # the _C.VideoMetadataCache, loaded on first use
        self.videos_too_short: List[str] = []  # entries left out: videos shorter than one clip
        if self.metadata_cache is not None:
            self._read_all_metadata(probe_threads)
        self._offsets = self._count_clips(probe_threads)

    # ---- clips -------------------------------------------------------------------------
    @property
    def span(self) -> int:
        """Timeline positions one clip covers (1 for a whole-video clip)."""
        return (self.frames_per_clip - 1) * self.step + 1 if self.frames_per_clip else 1

    def _source(self, v: int) -> str:
        return self._sources[v] if self._sources is not None else f"samples[{v}]"

    def _positions(self, v: int, info: Any) -> Tuple[np.ndarray, int]:
        """Entry v's timeline positions (the frame each shows) and the first one's index in
        the video's timeline; raises DataError for a bad segment."""
        timeline = info.timeline(self.frame_rate or 0.0)
        if self.segments is None:
            return timeline, 0
        start, end = self.segments[v]
        try:
            begin, stop = info.segment_range(self.frame_rate or 0.0, start, end)
        except _C.DataError as e:
            raise _data_error(f'{type(self).__name__} "{self.samples[v][0]}": segment '
                              f"{_C.describe_segment(start, end)} ({self._source(v)}): {e}") from None
        return timeline[begin:stop], begin

    def _metadata(self) -> Any:
        """The metadata cache file's contents (read once per process)."""
        with self._lock:
            if self._meta is None:
                meta = _C.VideoMetadataCache(self.metadata_cache)
                if meta.note:
                    warnings.warn(f"{type(self).__name__}: metadata_cache {self.metadata_cache!r} is {meta.note}",
                                  RuntimeWarning, stacklevel=3)
                self._meta = meta
            return self._meta

    def _read_all_metadata(self, threads: Optional[int]) -> None:
        """With a metadata cache, as video_reader does: every video's metadata read now (probing
        only what the cache lacks or what changed), in parallel, and the cache saved, so that
        the native reader (and the next run) probes nothing."""
        meta = self._metadata()
        first: Dict[str, int] = {}
        for v, (path, _) in enumerate(self.samples):
            first.setdefault(path, v)

        def read(v: int) -> None:
            try:
                self.video_info(v)  # through the per-process cache: counting clips reads it again
            except (RuntimeError, ValueError):
                pass  # reported by the video's clips, with the reason

        workers = max(1, min(threads or os.cpu_count() or 1, len(first) or 1))
        with ThreadPoolExecutor(workers) as pool:  # the stamps and probes release the GIL
            list(pool.map(read, first.values()))
        if meta.changed:
            try:
                meta.save()
            except RuntimeError as e:
                warnings.warn(f"{type(self).__name__}: the metadata cache was not saved ({e})", RuntimeWarning,
                              stacklevel=3)

    def _count_clips(self, threads: Optional[int]) -> np.ndarray:
        """Every entry's clips, as video_reader counts them when it prepares: a video shorter
        than one clip has none (torchvision's VideoClips; -1 below marks it); a video that
        cannot be read keeps its clips, which raise with the reason; contiguous: a segment
        shorter than a clip has none, a bad one one (failing) clip."""
        contiguous = self.sampler == "contiguous"
        unknown = 1 if contiguous else self.clips_per_video

        def count(v: int) -> int:
            try:
                info = self.video_info(v)
                whole = len(info.timeline(self.frame_rate or 0.0))
                if whole < self.span:
                    return -1
                if not contiguous:
                    return unknown
                timeline, _ = self._positions(v, info)
            except (RuntimeError, ValueError):
                return unknown  # fails in __getitem__ with the reason, as video_reader's sample does
            length = len(timeline)
            if self.frames_per_clip == 0:
                return 1 if length > 0 else 0
            return 0 if length < self.span else (length - self.span) // self.clip_stride + 1

        n = len(self.samples)
        workers = max(1, min(threads or os.cpu_count() or 1, n or 1))
        with ThreadPoolExecutor(workers) as pool:  # probing releases the GIL
            counts = list(pool.map(count, range(n)))
        short = [v for v, c in enumerate(counts) if c < 0]
        self.videos_too_short = [self.samples[v][0] for v in short]
        counts = [max(c, 0) for c in counts]
        if short:
            self._report_short(short, sum(counts))
        return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)

    def _report_short(self, short: List[int], clips: int) -> None:
        """One warning naming the videos shorter than one clip (video_reader's words); a
        DataError when no entry has a clip, naming the longest and the shortest."""
        name = type(self).__name__
        unit = " positions" if self.frame_rate else " frames"
        needs = (f"one clip needs {self.span}{unit} (frames_per_clip {self.frames_per_clip}, step {self.step})")
        length = {v: len(self.video_info(v).timeline(self.frame_rate or 0.0)) for v in short}
        named = lambda v: (f'"{self.samples[v][0]}" ({length[v]}'
                           f'{" positions at the clip frame rate" if self.frame_rate else " frames"})')
        if clips == 0:
            raise _data_error(f"{name}(): no video is long enough for one clip: {needs}; the longest is "
                              f"{named(max(short, key=length.get))}, the shortest {named(min(short, key=length.get))}")
        listed = ", ".join(named(v) for v in short[:8]) + (f" and {len(short) - 8} more" if len(short) > 8 else "")
        warnings.warn(f"{name}: {len(short)} of {len(self.samples)} videos give no clip (as in torchvision's "
                      f"VideoClips), {needs}: {listed}", RuntimeWarning, stacklevel=4)

    def __len__(self) -> int:
        return int(self._offsets[-1])

    def clip_location(self, index: int) -> Tuple[int, int]:
        """(entry, k): clip ``index`` is the k-th clip of entry ``entry`` (``samples[entry]``)."""
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"clip index {index} is out of range for a {type(self).__name__} of {n} clips")
        v = int(np.searchsorted(self._offsets, index, side="right")) - 1
        return v, index - int(self._offsets[v])

    def video_info(self, video: int):
        """``samples[video]``'s ``_C.VideoInfo`` (probed once per file, kept in a per-process cache)."""
        path = self.samples[video][0]
        with self._lock:
            info = self._cache.get(path)
            if info is not None:
                self._cache.move_to_end(path)
                return info
        if self.metadata_cache is not None:
            info = self._metadata().video_info(self._keys[video], path)
        else:
            info = _C.probe_video_info(path)
        with self._lock:
            self._cache[path] = info
            while len(self._cache) > self.cache_videos:
                self._cache.popitem(last=False)
        return info

    def clip_frames(self, index: int, generator: Optional[torch.Generator] = None) -> List[int]:
        """The frame indices (presentation order) of clip ``index``: what video_reader's
        frame_indices output gives for it (random: a new draw from ``generator``, or torch's
        global RNG)."""
        v, k = self.clip_location(index)
        path = self.samples[v][0]
        info = self.video_info(v)
        timeline, begin = self._positions(v, info)
        length = len(timeline)
        if length < self.span:
            if self.segments is None:
                rate = f" ({length} at the clip frame rate)" if self.frame_rate else ""
                raise _data_error(f'{type(self).__name__} "{path}": the video has {info.frames} frames{rate}, '
                                  f"a clip needs {self.span}")
            start, end = self.segments[v]  # clip_sampler.cc's message
            unit = " positions at the clip frame rate" if self.frame_rate else " frames"
            where = f" ({begin} to {begin + length - 1})" if length else ""
            raise _data_error(f'{type(self).__name__} "{path}": segment {_C.describe_segment(start, end)} '
                              f"({self._source(v)}): the segment has {length}{unit}{where}, a clip needs {self.span}")
        if self.frames_per_clip == 0:
            return timeline.tolist()
        room = length - self.span
        if self.sampler == "random" and self.group_clips:
            starts = torch.randint(room + 1, (self.clips_per_video,), generator=generator)
            start = int(torch.sort(starts).values[k].item())
        elif self.sampler == "random":
            start = int(torch.randint(room + 1, (1,), generator=generator).item())
        elif self.sampler == "uniform":
            start = room * k // (self.clips_per_video - 1) if self.clips_per_video > 1 else 0
        else:
            start = k * self.clip_stride
        return timeline[start:start + self.span:self.step].tolist()

    def set_epoch(self, epoch: int) -> None:
        """With ``seed=``: the epoch the per-clip generators are seeded with."""
        self.epoch = int(epoch)

    def _generator(self, index: int) -> Optional[torch.Generator]:
        if self.seed is None:
            return None
        s = np.random.SeedSequence([self.seed, self.epoch, index]).generate_state(2, dtype=np.uint64)
        return torch.Generator().manual_seed(int(s[0]) & _SEED_MASK)

    def _video_generator(self, video: int) -> Optional[torch.Generator]:
        """group_clips: the generator every clip of entry ``video`` draws its starts from."""
        if self.seed is None:
            return None
        s = np.random.SeedSequence([self.seed, self.epoch, video, 0x67726F7570]).generate_state(2, dtype=np.uint64)
        return torch.Generator().manual_seed(int(s[0]) & _SEED_MASK)

    def __getitem__(self, index: int) -> Tuple[Any, int]:
        g = self._generator(index)
        v, _ = self.clip_location(index)
        frames = self.clip_frames(index, self._video_generator(v) if self.group_clips else g)
        path, label = self.samples[v]
        clip = torch.from_numpy(_C.decode_clip(path, frames, info=self.video_info(v)))
        if self.transform is not None:
            clip = self.transform(clip, generator=g) if getattr(self.transform, "takes_generator", False) \
                else self.transform(clip)
        return clip, label

    def _native_samples(self) -> "_C.Samples":
        """What video_reader reads: every entry, in order (paths relative to root, labels,
        segments)."""
        return _C.Samples(self._keys, self.targets, self.root, self.segments)

    def __getstate__(self) -> Dict[str, Any]:  # worker processes start with an empty cache
        state = dict(self.__dict__)
        state["_cache"] = OrderedDict()
        state["_meta"] = None  # each process reads the metadata cache file itself
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(root={self.root!r}, entries={len(self.samples)}, clips={len(self)}, "
                f"segments={self.segments is not None}, frames_per_clip={self.frames_per_clip}, step={self.step}, "
                f"sampler={self.sampler!r}, frame_rate={self.frame_rate}, transform={self.transform!r})")


class GroupedClipSampler(torch.utils.data.Sampler):
    """The order for a ``group_clips`` VideoList / VideoFolder: every epoch its entries with
    clips, shuffled (``torch.randperm`` over entries, from ``generator`` or torch's global RNG;
    ``shuffle=False``: in order), each entry's ``clips_per_video`` clips one after another in
    time order. Works with torch's DataLoader and HabanaDataLoader (whose native reader then
    decodes each entry's clips in one pass)."""

    def __init__(self, dataset: "VideoList", shuffle: bool = True, generator: Optional[torch.Generator] = None):
        if not getattr(dataset, "group_clips", False):
            raise ValueError("GroupedClipSampler() needs a VideoList / VideoFolder made with group_clips=True")
        self.dataset, self.shuffle, self.generator = dataset, shuffle, generator

    def __iter__(self):
        k = self.dataset.clips_per_video
        groups = len(self.dataset) // k
        order = torch.randperm(groups, generator=self.generator).tolist() if self.shuffle else range(groups)
        for g in order:
            yield from range(g * k, (g + 1) * k)

    def __len__(self) -> int:
        return len(self.dataset)


def _segment(start: Any, end: Any, where: str) -> Tuple[float, Optional[float]]:
    try:
        s = float(start)
        e = None if end is None or (isinstance(end, float) and math.isinf(end) and end > 0) else float(end)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: start and end must be numbers of seconds (end None: the video's end), "
                        f"got {start!r}, {end!r}") from None
    if not math.isfinite(s) or (e is not None and math.isnan(e)):
        raise ValueError(f"{where}: start must be a finite number of seconds, end a number or None, got {start!r}, {end!r}")
    return s, e


class VideoFolder(VideoList):
    """Clips of the videos in ``root/<class>/**/<file>``, as a torch map-style Dataset.

    Videos, classes and labels are found as torchvision's ImageFolder finds images
    (``classes``, ``class_to_idx``, ``samples`` = [(path, label)], ``targets``; sorted class
    folders, a recursive sorted walk, ``extensions`` matched case-insensitively, default
    ``VIDEO_EXTENSIONS``). Clips are picked, decoded and reported as ``VideoList`` says (one
    entry per video, no segments).
    """

    def __init__(self, root: Union[str, os.PathLike], frames_per_clip: int = 16, step: int = 1,
                 sampler: str = "random", clips_per_video: int = 1, clip_stride: int = 1,
                 frame_rate: Optional[float] = None, extensions: Optional[Sequence[str]] = None,
                 transform: Optional[Callable] = None, seed: Optional[int] = None, *,
                 metadata_cache: Optional[Union[str, os.PathLike]] = None, probe_threads: Optional[int] = None,
                 cache_videos: int = 1024, group_clips: bool = False):
        self.root = os.fspath(root)
        self.extensions = tuple(e.lower() for e in (extensions if extensions is not None else VIDEO_EXTENSIONS))
        self.classes, self.class_to_idx = find_classes(self.root)
        found: List[Tuple[str, int]] = make_dataset(self.root, self.class_to_idx, extensions=self.extensions)
        self._setup([os.path.relpath(p, self.root) for p, _ in found], [t for _, t in found], None,
                    [p for p, _ in found], None, frames_per_clip=frames_per_clip, step=step, sampler=sampler,
                    clips_per_video=clips_per_video, clip_stride=clip_stride, frame_rate=frame_rate,
                    transform=transform, seed=seed, metadata_cache=metadata_cache, probe_threads=probe_threads,
                    cache_videos=cache_videos, group_clips=group_clips)
