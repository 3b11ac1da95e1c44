"""HabanaDataLoader: a drop-in for torch.utils.data.DataLoader (a subclass of it).

A torchvision ImageFolder/DatasetFolder or a timm ImageDataset over an image folder (or a
Subset of one; or DINO's ReturnIndexDataset, an ImageFolder returning the index in place of the
label) whose transform the pipeline can express runs natively: threads instead of worker processes, no pickling, no per-sample Python.
So does a habana_dataloader.VideoFolder or VideoList whose transform is None or one of its clip transforms
(video_reader over the folder's videos; the sampler's indices are clip indices).
Anything else runs torch's own DataLoader code (the loader *is* one: the same iterators,
workers, warnings and errors), with every reason listed in ``.fallback_reason``, logged, and
warned once per process (``strict=True`` raises instead).

Native semantics: each epoch's index order comes from the loader's own sampler / batch
sampler (built by torch from the same arguments, iterated in Python), so shuffle=False is
torch's exact order, and RandomSampler, SubsetRandomSampler, DistributedSampler (set_epoch),
drop_last and generator behave as in torch; the base seed and the permutation are drawn when
torch's iterators draw them (the permutation at ``iter()`` with workers, at the first
``next()`` without), and persistent_workers=True draws no new base seed after the first
epoch. Labels are the dataset's own ``samples``; batches are ``[images, labels]`` lists, as
torch's default_collate makes them (timm's fast_collate: the same tensors as a tuple).

One C++ pipeline serves the loader's whole life: its file list is the dataset in dataset
order (file list line i is ``dataset[i]``), and each ``iter(loader)`` hands it that epoch's
flattened batch order with ``set_epoch_order(epoch, order)``; the pipeline prefetches within
the epoch and is never rebuilt between epochs. An iterator displaced by a newer ``iter()``
still works, as torch's do: on its next ``next()`` it builds a pipeline of its own.
"""

from __future__ import annotations

import inspect
import logging
import os
import random
import warnings
from typing import Any, Dict, List, Optional, TypeVar, Union

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader
from torch.utils.data._utils.collate import default_collate
from torch.utils.data._utils.pin_memory import pin_memory as _pin_memory

from ._collate import PostCollate, post_collate
from ._datasets import native_dataset
from ._native_dataset import NativeDataset, Options
from ._support import Unsupported
from ._wds_dataset import rank_and_world as _rank_and_world
from ._video_mapping import _NativeVideo
from ._graph import DataNode, collect
from .pipeline import AUTO, Pipeline, auto_or_int, error_policy
from . import _C, fn

log = logging.getLogger("habana_dataloader")
_TORCH_PARAMS = set(inspect.signature(DataLoader.__init__).parameters) - {"self"}
# v2: "generator" is the state the next epoch's draws start from (v1: the epoch's start when
# "order" is present), and "seed" is the loader's pipeline seed. v1 states still load.
_STATE_FORMAT = "habana-dataloader-state-v2"
_STATE_FORMATS = ("habana-dataloader-state-v1", _STATE_FORMAT)
_SEED_MASK = (1 << 63) - 1
T_co = TypeVar("T_co", covariant=True)
_warned: set = set()  # messages warned in this process (each is warned once, logged always)


def _say_once(msg: str, category=RuntimeWarning, stacklevel: int = 3) -> None:
    """Warns `msg` the first time this process says it; logs it every time (WARNING the first
    time, INFO after), so a script building many loaders is not flooded."""
    if msg in _warned:
        log.info(msg)
        return
    _warned.add(msg)
    log.warning(msg)
    warnings.warn(msg, category, stacklevel=stacklevel + 1)


class _Unmet(ValueError):
    """An explicit choice (decoder="hardware") this machine cannot meet: raised, never a
    reason to fall back to torch's DataLoader."""


def _resolve_device(device: Optional[str]) -> Optional[torch.device]:
    """``device`` checked and converted once: None (stay on the CPU) or the device batches are
    moved to (and the pipeline's, as this torch.device)."""
    if device is None or device in ("", "cpu"):
        return None
    if device == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else None
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"HabanaDataLoader() argument 'device': {e}") from None
    if d.type == "cpu":
        return None
    if d.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"HabanaDataLoader(device={device!r}): CUDA is not available "
                         "(device='auto' moves batches to the GPU only when there is one)")
    return d


_GPU_OPS: Optional[frozenset] = None
# Whether _gpu_tail also moves RandomResizedCrop's resize out of the fused decode to the gpu
# stage. Off: measured on an H100 (docs/PERFORMANCE.md), the decode of the window dominates the
# CPU time either way, rates were within the run-to-run spread, and the upload of full-scale
# windows needs about 1.1 GB of pinned memory against 131 MB. samples/benchmark/gpu_bench.py
# compares both ("gpu-resize").
_SPLIT_RESIZE = False


def _gpu_tail(outputs: List[Any], limit: int = 1 << 30) -> List[str]:
    """Moves the operators at the end of each output's chain that have a gpu-stage
    implementation (crop_mirror_normalize, resize, ...), at most `limit` per chain, to the gpu
    stage; returns their names.
    A decoder's fused RandomResizedCrop resize becomes a gpu resize (the decoder then hands
    over the window at full scale: the same pixels, as both resize kernels are the same), so
    the CPU threads only decode."""
    global _GPU_OPS
    if _GPU_OPS is None:
        _GPU_OPS = frozenset(s["name"] for s in _C.schemas() if "gpu" in s["stages"])
    readers: Dict[int, int] = {}  # node uid -> how many nodes read it
    for n in collect(outputs):
        for up in n.upstream():
            readers[up.uid] = readers.get(up.uid, 0) + 1
    moved: List[str] = []
    for d in outputs:
        n = d.node
        left = limit
        while left > 0 and n.op in _GPU_OPS and n.stage == "cpu" and len(n.inputs) == 1:
            n.stage = "gpu"
            moved.append(n.op)
            left -= 1
            up = n.inputs[0]
            dec = up.node
            size = dec.args.get("resize") or ()
            if (_SPLIT_RESIZE and left > 0 and dec.op == "image_decoder" and dec.stage == "cpu" and readers.get(dec.uid) == 1
                    and dec.args.get("random_crop") == "resized" and len(size) == 2
                    and dec.args.get("dct_scaling") is False):
                del dec.args["resize"]
                n.inputs[0] = fn.resize(up, size=list(size), interpolation=dec.args.get("interpolation", "bilinear"),
                                        antialias=dec.args.get("antialias", True), stage="gpu")
                moved.append("resize")
                break
            n = dec
    return moved


# image_decoder arguments that make it crop or resize (fused geometry), and those of its RRC.
_RRC_ARGS = ("scale", "ratio", "attempts", "interpolation", "random_interpolation", "antialias")
_GEOMETRY_ARGS = ("random_crop", "resize", "max_size", "center_crop", "pillow", "dct_scaling") + _RRC_ARGS


def _hardware_decode(outputs: List[DataNode]) -> List[str]:
    """Puts each image_decoder whose every reader is on the gpu stage on the mixed stage: whole
    images decoded by the GPU's hardware JPEG engines with CPU threads sharing the load. Its
    fused RandomResizedCrop becomes a gpu random_resized_crop, a fused Resize a gpu resize (the
    same laws and kernels; windows come from that node's stream). A Pillow-exact resize or a
    center crop keeps its decoder on the CPU. Rewires the graph in place (a decoder that is
    itself an output stays as it is, so the outputs do not change); returns a note per decoder
    kept on the CPU."""
    nodes = collect(outputs)
    readers: Dict[int, List[Any]] = {}
    for n in nodes:
        for d in n.inputs:
            readers.setdefault(d.node.uid, []).append(n)
    notes: List[str] = []
    replaced: Dict[int, DataNode] = {}
    for dec in nodes:
        if dec.op != "image_decoder" or dec.stage != "cpu":
            continue
        users = readers.get(dec.uid, [])
        if not users or any(u.stage != "gpu" for u in users) or any(o.node is dec for o in outputs):
            continue
        a = dec.args
        if a.get("pillow") or a.get("center_crop"):
            notes.append("JPEGs are decoded by CPU threads (a Pillow-exact resize or a center crop is fused "
                         "into the decoder: the mixed stage decodes whole images)")
            continue
        size = list(a.get("resize") or [])
        rrc = a.get("random_crop") == "resized"
        if rrc and len(size) != 2:
            notes.append("JPEGs are decoded by CPU threads (RandomResizedCrop without an [h, w] size)")
            continue
        geometry = {k: a[k] for k in _GEOMETRY_ARGS if k in a}
        for k in geometry:
            del a[k]
        dec.stage = "mixed"
        out = dec.outputs[0]
        filt = {k: geometry[k] for k in ("interpolation", "antialias") if k in geometry}
        if rrc:
            out = fn.random_resized_crop(out, size=size, stage="gpu",
                                         **{k: geometry[k] for k in _RRC_ARGS if k in geometry})
        elif size:
            extra = {"max_size": geometry["max_size"]} if geometry.get("max_size") else {}
            out = fn.resize(out, size=size, stage="gpu", **filt, **extra)
        replaced[dec.uid] = out
    for n in nodes:  # the new crop / resize nodes (not in `nodes`) keep reading the decoders
        n.inputs = [replaced[d.node.uid] if d.index == 0 and d.node.uid in replaced else d for d in n.inputs]
    return notes


class HabanaDataLoader(DataLoader[T_co]):
    """``torch.utils.data.DataLoader``'s signature and defaults (it is a subclass), plus
    keyword-only extras:

    Args:
        num_threads: worker threads of the native pipeline, or "auto" (the default): tuned
            while it runs from the measured sample rate and how long the training loop waits
            for batches, at most the CPUs this process may use (``Pipeline``'s and the C++
            ``PipelineOptions``' name and meaning). When only ``num_workers`` (> 0) is given it
            is auto's ceiling: torch code sets num_workers for worker processes, often above
            the cores there are; read as "use at most this many", it keeps the user's limit
            without oversubscribing. ``threads=`` is the older spelling, still accepted.
            ``autotuned`` says what runs.
        device: "cuda[:N]": batches are CUDA tensors there. The native pipeline decodes and crops on
            CPU threads, uploads uint8 pixels from pinned memory and runs the last operators
            (flip, normalise, layout: ``gpu_ops``) as CUDA kernels on its own stream, ordered
            before torch's current stream without blocking the host. Where that cannot be
            used, batches are moved with torch (pinned, non_blocking) and ``native_notes`` says
            why. "auto": the GPU when CUDA is available, else stay on the CPU; default: none.
        seed: fixes the augmentation seed, and seeds the shuffle order when no ``generator`` is
            given (default: the base seed torch's iterator draws, from ``generator`` or torch's
            global RNG, at the first epoch, so torch.manual_seed reproduces runs).
        on_error: "raise" (a bad file raises habana_dataloader.DataError) or "skip" (replaced
            by the next sample, counted).
        strict: raise ValueError instead of falling back to torch.
        jpeg_index_mb: memory for JPEG entry-point indexes (default 512; 0: off). With random
            crops, each file is indexed on its first decode (one extra pass, so the first epoch
            is slower), and later epochs entropy-decode only the blocks around each crop (same
            pixels). About 11% of a file's size for a full index; the budget is shared out
            over the dataset, with coarser indexes when it is small.
        decoder: with device="cuda": "auto" (default) and "cpu" decode on CPU threads (the
            batches equal the CPU loader's bit for bit; the end of the chain runs on the gpu
            stage): measured on an H200, that is the faster path today, in training too
            (docs/CUDA.md); "hardware" decodes JPEGs on the GPU's hardware engines (A100,
            H100, H200: the mixed stage, CPU threads sharing the load; pixels are nvJPEG's,
            within a level or two of libjpeg-turbo's; the RandomResizedCrop or Resize then
            runs as a CUDA kernel) and clips on NVDEC, and requires them: where there are none
            (no CUDA device, device="auto" on a machine without a GPU, no engines) it raises
            ValueError naming the argument, as device="cuda" does without CUDA, rather than
            falling back to torch's DataLoader.
        python_tail: transforms that have no native mapping (a recipe's own class, one
            torchvision transform the pipeline lacks) do not send the loader back to torch:
            decode and the mappable transforms run natively, those run in Python inside the
            pipeline, per sample, on a PIL image (``python_transforms`` names them). Their calls
            are serialised (the global RNGs are seeded per sample from the pipeline's stream,
            so a seed repeats the batches, and restored after), so a heavy one bounds the
            loader's rate where torch's worker processes would run it in parallel: off by
            default.
        cache_dir, cache_limit: a local cache of remote (http(s)://, s3://) files and shards,
            shared by the ranks and processes of the machine naming the same directory;
            cache_limit in bytes or "500M", "10G" (default: the dataset's own, as
            ``WebDataset(cache_dir=...)``, else $HDL_CACHE_DIR / $HDL_CACHE_LIMIT, else none;
            ``Pipeline``'s and the C++ ``PipelineOptions::cache``'s meaning).

    torch's arguments on the native path: ``timeout`` is a deadline per batch (RuntimeError
    "DataLoader timed out after N seconds", as torch's); ``num_workers`` caps the tuned thread
    count when ``num_threads`` is not given; ``prefetch_factor`` sets the batches prepared
    ahead (default: "auto", which starts at 1 and grows within a 1 GiB budget when batches
    arrive unevenly); ``worker_init_fn`` and ``multiprocessing_context`` have no
    worker process to apply to: no Python code runs per sample, and the augmentations draw
    from the pipeline's seed (torch's base seed). The loader says so (``native_notes``,
    warned once per process) instead of ignoring them silently.
    """

    def __init__(self, dataset, batch_size: Optional[int] = 1, shuffle: Optional[bool] = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: Optional[int] = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", num_threads: Union[int, str, None] = None,
                 device: Optional[str] = None, seed: Optional[int] = None,
                 on_error: str = "raise", strict: bool = False, jpeg_index_mb: int = 512,
                 python_tail: bool = False, decoder: str = "auto", threads: Optional[int] = None,
                 cache_dir: Optional[str] = None, cache_limit: Any = None, **torch_kwargs: Any):
        unknown = sorted(set(torch_kwargs) - _TORCH_PARAMS)
        if unknown:
            raise TypeError(f"HabanaDataLoader.__init__() got an unexpected keyword argument {unknown[0]!r}")
        # Each of the loader's own options is checked and converted here, once, and handed down
        # in that form under the same name (num_threads, on_error, device).
        if threads is not None:  # the older spelling of num_threads
            if num_threads is not None:
                raise TypeError("HabanaDataLoader() takes num_threads= or threads= (its older spelling), not both")
            num_threads = threads
        if num_threads is not None:
            num_threads = auto_or_int(num_threads, "num_threads", 0, "HabanaDataLoader")
        policy = error_policy(on_error, "HabanaDataLoader")
        if decoder not in ("auto", "hardware", "cpu"):
            raise ValueError(f"HabanaDataLoader() argument 'decoder' must be 'auto', 'hardware' or 'cpu', got {decoder!r}")
        resolved_device = _resolve_device(device)
        if decoder == "hardware":  # an explicit opt-in: what it needs must be here
            if resolved_device is None or resolved_device.type != "cuda":
                found = " found no CUDA device" if device == "auto" else f"={device!r}"
                raise ValueError(f"HabanaDataLoader(decoder='hardware') decodes on the GPU's hardware engines and "
                                 f"needs device='cuda' (or 'auto' on a machine with a GPU); device{found}")
            cuda = _C.cuda_status()
            if not cuda["available"]:
                raise ValueError(f"HabanaDataLoader(decoder='hardware'): the gpu stage cannot run ({cuda['reason']})")
        if isinstance(jpeg_index_mb, bool) or not isinstance(jpeg_index_mb, int) or jpeg_index_mb < 0:
            raise ValueError(f"HabanaDataLoader() argument 'jpeg_index_mb' must be an int >= 0, got {jpeg_index_mb!r}")
        args = dict(dataset=dataset, batch_size=batch_size, shuffle=shuffle, sampler=sampler,
                    batch_sampler=batch_sampler, num_workers=num_workers, collate_fn=collate_fn,
                    pin_memory=pin_memory, drop_last=drop_last, timeout=timeout,
                    worker_init_fn=worker_init_fn, multiprocessing_context=multiprocessing_context,
                    generator=generator, prefetch_factor=prefetch_factor,
                    persistent_workers=persistent_workers, pin_memory_device=pin_memory_device, **torch_kwargs)
        if seed is not None and generator is None:  # seed= also fixes the shuffle order
            args["generator"] = torch.Generator().manual_seed(int(seed))
        # torch validates the arguments and builds sampler / batch_sampler exactly as usual.
        targs = {k: v for k, v in args.items() if k in _TORCH_PARAMS and not (k == "prefetch_factor" and v is None)}
        # Its warnings (e.g. "will create 8 worker processes") are only true of the torch path:
        # recorded here, re-issued below if the loader falls back.
        with warnings.catch_warnings(record=True) as torch_warnings:
            warnings.simplefilter("always")
            super().__init__(**targs)
        self.jpeg_index_mb = jpeg_index_mb
        if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
            raise TypeError(f"HabanaDataLoader() argument 'cache_dir' must be a path, got {type(cache_dir).__name__}")
        # The loader's cache, else the dataset's (WebDataset(cache_dir=...)); checked once here.
        self.cache_dir = os.fspath(cache_dir) if cache_dir is not None else getattr(dataset, "cache_dir", None)
        self.cache_limit = (_C.parse_byte_size(cache_limit) if cache_limit is not None
                            else getattr(dataset, "cache_limit", None))
        self.python_tail = bool(python_tail)
        self.decoder = decoder
        self._hw_decode = False  # JPEGs on the GPU's hardware engines (the mixed stage)
        # Not set: "auto", capped by num_workers when that was given (see num_threads above).
        self.num_threads = num_threads if num_threads is not None else AUTO
        self._max_threads = num_workers if num_threads is None and num_workers > 0 else None
        self.device, self.seed, self.on_error, self.strict = device, seed, on_error, strict
        self._error_policy, self._device = policy, resolved_device
        # As torch's iterator: pin only with CUDA unless a pin_memory_device is named.
        self._pin_device = pin_memory_device or None
        self._pin = bool(pin_memory) and (torch.cuda.is_available() or self._pin_device is not None)
        self._prefetch = AUTO if prefetch_factor is None else max(1, int(prefetch_factor))
        self._epoch = 0
        self._iter: Optional[_NativeIter] = None
        self._torch_it: Any = None  # the fallback path's newest torch iterator
        self._resume: Optional[Dict[str, Any]] = None
        # The native pipeline: one per loader, built with _pipe_seed (None: the first epoch's
        # base seed). _pipelines_built counts C++ pipelines built, for tests and benchmarks.
        self._pipe: Optional[Pipeline] = None
        self._pipe_seed: Optional[int] = int(seed) & _SEED_MASK if seed is not None else None
        self._pipelines_built = 0
        self._sample_list: Optional[_C.Samples] = None
        self.fallback_reason: Optional[str] = None
        self.native_notes: List[str] = []
        self.python_transforms: List[str] = []  # those run in Python inside the pipeline (a Python tail)
        #: operators the native pipeline runs as CUDA kernels (device="cuda"); [] otherwise
        self.gpu_ops: List[str] = []
        self._gpu_tail = False
        self._gpu_limit: Optional[int] = None  # operators per chain on the gpu stage (None: all)
        try:
            self._try_native(args)
        except _Unmet:
            raise
        except Unsupported as e:
            self.fallback_reason = str(e)
        except (ValueError, TypeError, RuntimeError) as e:  # the native graph did not build
            self.fallback_reason = f"the native pipeline could not be built: {e}"
        self.native = self.fallback_reason is None
        if not self.native:
            self._drop_pipeline()
            if strict:
                raise ValueError(f"HabanaDataLoader(strict=True) cannot run natively: {self.fallback_reason}")
            hint = getattr(self, "_tail_hint", None)
            if hint:
                self.fallback_reason += (f" (python_tail=True would run decode and the mappable transforms natively and "
                                         f"only {', '.join(hint)} in Python inside the pipeline)")
            _say_once(f"HabanaDataLoader: using torch.utils.data.DataLoader because {self.fallback_reason}")
            for w in torch_warnings:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            return
        tails = getattr(getattr(self, "_wire", None), "python_tails", [])
        self.python_transforms = [name for tail in tails for name in tail.names()]
        if tails:
            self.native_notes.append(
                f"{', '.join(self.python_transforms)} run in Python inside the pipeline, per sample and one at a "
                f"time (decode and the other transforms run natively), because: {'; '.join(tails[0].reasons)}")
        if worker_init_fn is not None:
            self.native_notes.append("worker_init_fn is not called: the native path has no worker processes "
                                     "(augmentations draw from the pipeline's seed)")
        if multiprocessing_context is not None:
            self.native_notes.append("multiprocessing_context is not used: the native path starts threads, not processes")
        if bool(pin_memory) and not self._pin:
            self.native_notes.append("pin_memory=True without CUDA: batches are not pinned (as torch's)")
        for note in self.native_notes:
            if not note.startswith("pin_memory"):  # torch says nothing there either
                _say_once(f"HabanaDataLoader: {note}", UserWarning)

    @property
    def threads(self) -> Union[int, str]:
        """``num_threads`` under its older name."""
        return self.num_threads

    @property
    def autotuned(self) -> Optional[Dict[str, int]]:
        """The native pipeline's threads and prefetch depth in use now ({"num_threads": ...,
        "prefetch_depth": ...}: the tuner's choice where they are "auto"); None before the
        pipeline is built (the first iteration) or on torch's path."""
        return self._pipe.autotuned if self._pipe is not None else None

    # ---- what runs natively -----------------------------------------------------------------
    def _try_native(self, a: Dict[str, Any]) -> None:
        """Raises Unsupported listing every reason the loader cannot run natively."""
        reasons: List[str] = []
        self._tail_hint: Optional[List[str]] = None  # what python_tail=True would run in Python
        tail_blockers = 0
        self._video: Optional[_NativeVideo] = None  # a VideoList's native mapping
        self._order_map: Optional[np.ndarray] = None  # loader dataset index -> pipeline sample
        if a["batch_size"] is None and a["batch_sampler"] is None:
            reasons.append("batch_size=None (no automatic batching)")
        bs = self.batch_sampler
        if bs is not None and type(bs) is not BatchSampler:
            reasons.append(f"batch_sampler is a {type(bs).__name__}, not torch's BatchSampler")
        # The dataset kind (_datasets.py) that claims the dataset: how the pipeline reads it
        # (sample list, reader, the graph after it), or every reason it cannot.
        data = native_dataset(a["dataset"], Options(self.jpeg_index_mb, self.python_tail, bool(reasons)))
        if not reasons:  # the transform may be the only blocker: what a Python tail would take
            self._tail_hint, tail_blockers = data.tail_hint, data.tail_blockers
        reasons += data.reasons
        source = data.source
        # What a collate_fn other than default_collate does to default_collate's batch:
        # f(*default_collate(batch)) (MixUp/CutMix), timm's fast_collate (a tuple).
        self._post: Optional[PostCollate] = None
        if a["collate_fn"] not in (None, default_collate):
            try:
                self._post = post_collate(a["collate_fn"], source, self.python_tail)
                if self._post is None:
                    reasons.append("a collate_fn other than default_collate, f(*default_collate(batch)) or timm's "
                                   "fast_collate is given")
            except Unsupported as e:
                reasons += e.reasons
        if reasons:
            if len(reasons) > tail_blockers:  # blockers a Python tail cannot take: no hint
                self._tail_hint = None
            elif self._tail_hint and a["collate_fn"] not in (None, default_collate):
                try:  # a collate_fn that takes this transform natively but not with a Python tail
                    post_collate(a["collate_fn"], source, True)
                except Unsupported:
                    self._tail_hint = None
            raise Unsupported(reasons)
        self._data: NativeDataset = data
        self._video, self._order_map = data.video, data.order_map
        self._wire, self._multi_view = data.wire, data.multi_view
        self._batch_size = bs.batch_size
        self._last_batch = "drop" if bs.drop_last else "partial"
        if data.iterable is None and len(a["dataset"]) == 0:
            raise Unsupported("the dataset is empty")
        self.native_notes += [n for n in data.notes if n not in self.native_notes]
        # The sample list, once: entry i is dataset[i] (through any Subset), so the sampler's
        # indices are the pipeline's dataset indices. Handed to the pipeline in memory, kept
        # while the loader lives (a pipeline is rebuilt from it only to resume a state saved
        # with another seed).
        self._sample_list = data.samples()
        # Build now: a mistake the C++ graph finds surfaces here. With seed= this is the
        # loader's pipeline; otherwise its seed is drawn at the first epoch, as torch's.
        if self._device is not None and self._device.type == "cuda":
            # The end of the chain on the gpu stage (clips: the normalise); with
            # decoder="hardware" the decoder on the mixed stage (JPEG engines, or NVDEC for
            # clips), CPU threads taking what they cannot. "auto" keeps decoding on the CPU
            # threads: on an H200 the mixed stage was the slower path (docs/CUDA.md).
            cuda = _C.cuda_status()
            self._gpu_tail = bool(cuda["available"])
            if not self._gpu_tail:
                self.native_notes.append(f"the gpu stage is not used ({cuda['reason']}): batches are "
                                         "moved to CUDA with torch")
            elif self.decoder == "hardware":
                video = self._video is not None
                status = _C.video_hardware_status if video else _C.hardware_jpeg_status
                hw = status(self._device.index or 0)
                self._hw_decode = bool(hw["available"])
                if not self._hw_decode:
                    raise _Unmet(f"HabanaDataLoader(decoder='hardware'): {hw['reason']}")
        if self.decoder == "hardware" and not self._hw_decode:  # checked in __init__: a safety net
            raise _Unmet("HabanaDataLoader(decoder='hardware') needs device='cuda' with the gpu stage")
        while True:
            try:
                pipe = self._pipeline(self._pipe_seed if self._pipe_seed is not None else 0)
                break
            except (ValueError, TypeError, RuntimeError) as e:
                if not self._gpu_tail:
                    raise
                # An operator the gpu stage cannot take as configured (e.g. RandomCrop with
                # reflect padding): move fewer operators, down to none.
                self._gpu_limit = (self._gpu_limit if self._gpu_limit is not None else len(self.gpu_ops)) - 1
                if self._gpu_limit <= 0:
                    self._gpu_tail = False
                    self.native_notes.append(f"the gpu stage is not used ({e}): batches are moved to CUDA with torch")
        mismatch = data.verify(pipe)
        if mismatch:
            self._drop_pipeline()
            raise Unsupported(mismatch)
        # The samples the pipeline's indices count: the dataset's, or (an iterable dataset) the reader's.
        self._num_samples = len(a["dataset"]) if data.iterable is None else int(pipe.dataset_info()["samples"])
        if self._num_samples == 0:
            self._drop_pipeline()
            raise Unsupported("the dataset is empty")
        if self._pipe_seed is None:
            self._drop_pipeline()

    def _new_pipeline(self, seed: int) -> Pipeline:
        gpu = self._gpu_tail
        pipe = Pipeline(batch_size=self._batch_size, num_threads=self.num_threads,
                        prefetch_depth=self._prefetch, seed=seed, on_error=self._error_policy,
                        max_threads=self._max_threads,
                        device=self._device if gpu else "cpu", cache_dir=self.cache_dir,
                        cache_limit=self.cache_limit)
        with pipe:
            if self._video is not None:
                reader_stage = "mixed" if gpu and self._hw_decode else "cpu"
                frames, labels = self._data.read(self._sample_list, self._last_batch, stage=reader_stage)
                out = self._video.after(frames, stage="gpu" if gpu else "cpu")
                pipe.set_outputs(out, labels)
                self.gpu_ops = [n.op for n in collect([out]) if n.stage == "gpu"] if gpu else []
                pipe.build()
                self._pipelines_built += 1
                return pipe
            # An iterable dataset kind's reader may shuffle by itself (a streamed WebDataset): its seed.
            files, labels = self._data.read(self._sample_list, self._last_batch,
                                            **({"seed": seed} if self._data.iterable is not None else {}))
            images = self._wire(files)
            moved = _gpu_tail(images, self._gpu_limit if self._gpu_limit is not None else 1 << 30) if gpu else []
            if gpu and self._hw_decode:
                kept = _hardware_decode(images)
                self.native_notes += [n for n in kept if n not in self.native_notes]
                moved = moved + [n.op for n in collect(images) if n.stage == "gpu" and n.op not in moved]
            pipe.set_outputs(*images, labels)
        self.gpu_ops = moved  # what this build tried (the retry above shortens it)
        pipe.build()
        self._pipelines_built += 1
        return pipe

    def _pipeline(self, seed: int) -> Pipeline:
        """The loader's pipeline with this seed: the one it has, or a new one (rare: the first
        epoch without seed=, close(), or a state saved with another seed)."""
        if self._pipe is not None and self._pipe.seed == seed:
            return self._pipe
        self._drop_pipeline()
        self._pipe = self._new_pipeline(seed)
        return self._pipe

    def _drop_pipeline(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None

    # ---- DataLoader interface ------------------------------------------------------------
    def __iter__(self):
        if not self.native:
            return self._fallback_iter()
        resume, self._resume = self._resume, None
        it = self._iter
        if it is not None and self.persistent_workers and self.num_workers > 0 and not it.displaced:
            # torch's persistent iterator: the same object, reset (an unfinished epoch starts
            # over, as torch's _reset), and no new base seed.
            it._start(resume, first=False)
            return it
        if it is not None and not it.finished:
            it.displace()  # it goes on with a pipeline of its own if used again
        self._iter = _NativeIter(self, resume)
        return self._iter

    def _fallback_iter(self):
        """torch's own iterator (workers, warnings, errors and all), positioned for a resume."""
        prev = self._torch_it
        if prev is not None and _torch_iter_done(prev):
            self._epoch += 1
        skip, self._resume = (self._resume or {}).get("batches_yielded", 0), None
        it = super().__iter__()
        self._torch_it = it
        for _ in range(skip):  # the batches a saved state had already handed out
            next(it)
        return it

    def state_dict(self) -> Dict[str, Any]:
        """The position, as torchdata's StatefulDataLoader: ``load_state_dict`` on a new
        loader with the same arguments resumes mid-epoch with exactly the remaining batches,
        and the epochs after it draw what this loader's would (from ``generator`` when one
        is given; torch's global RNG is the caller's to restore)."""
        gen = self.generator
        state: Dict[str, Any] = {"format": _STATE_FORMAT, "native": self.native, "epoch": self._epoch,
                                 "batches_yielded": 0, "generator": gen.get_state() if gen is not None else None}
        if not self.native:
            it = self._torch_it
            if it is not None and _torch_iter_done(it):
                state["epoch"] = self._epoch + 1
            elif it is not None:
                state["batches_yielded"] = int(it._num_yielded)
            return state
        state["seed"] = self._pipe_seed
        it = self._iter
        if it is not None and not it.finished and not it.displaced:
            if it.order is None:  # iter() was called, its permutation not drawn yet
                state.update(epoch=it.epoch, generator=it.generator_before)
            else:
                order = it.order
                small = order.size and 0 <= order.min() and order.max() < 2**31
                state.update(epoch=it.epoch, batches_yielded=it.yielded, seed=it.seed,
                             order=torch.from_numpy(order.astype(np.int32 if small else np.int64)),
                             generator=it.generator_after)
                if self._data.iterable is not None:
                    # Every rank has taken as many batches (DDP steps in lockstep): the epoch's
                    # samples taken by the whole job, whatever the world size of the resume.
                    world = _rank_and_world()[1]
                    left = self._num_samples - it.consumed_before
                    state.update(world=world, consumed_before=it.consumed_before,
                                 consumed=it.consumed_before + min(it.yielded * self._batch_size * world, left))
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("format") not in _STATE_FORMATS:
            raise ValueError("not a HabanaDataLoader.state_dict()")
        self._epoch = int(state["epoch"])
        gen = self.generator
        v1_mid_epoch = state["format"] != _STATE_FORMAT and "order" in state
        if gen is not None and state.get("generator") is not None and not v1_mid_epoch:
            gen.set_state(state["generator"])
        if self.native and state.get("seed") is not None:  # the pipeline seed it ran with
            self._pipe_seed = int(state["seed"])
        self._torch_it = None
        self._resume = dict(state)

    def close(self) -> None:
        """Stops the native pipeline's threads now (a later ``iter()`` builds it again)."""
        if self._iter is not None:
            self._iter.displace()
        self._drop_pipeline()


def _apply(obj: Any, f) -> Any:
    """f on every tensor of a batch (lists, tuples and dicts of them)."""
    if isinstance(obj, torch.Tensor):
        return f(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_apply(x, f) for x in obj)
    if isinstance(obj, dict):
        return {key: _apply(v, f) for key, v in obj.items()}
    return obj


def _torch_iter_done(it: Any) -> bool:
    try:
        return it._num_yielded >= len(it)
    except TypeError:  # an IterableDataset without __len__
        return False


class _NativeIter:
    """One epoch (several, for persistent_workers): the order from the batch sampler, given to
    the loader's pipeline, batches as torch's."""

    def __init__(self, loader: HabanaDataLoader, resume: Optional[Dict[str, Any]]):
        self.loader = loader
        self._own: Optional[Pipeline] = None  # a pipeline of its own, once displaced
        self.displaced = False
        self._start(resume, first=True)

    def _start(self, resume: Optional[Dict[str, Any]], first: bool) -> None:
        loader = self.loader
        self.epoch = loader._epoch
        self.finished = False
        self.yielded = 0
        self.order: Optional[np.ndarray] = None
        self.consumed_before = 0  # an iterable dataset resumed: the epoch's samples all ranks had taken
        self._bad: List[int] = []
        self._pipe: Optional[Pipeline] = None
        self._timeout = float(loader.timeout)
        gen = loader.generator
        self.generator_before = gen.get_state() if gen is not None else None
        self.generator_after = self.generator_before
        iterable = loader._data.iterable
        if resume and iterable is not None and resume.get("world") is not None:
            # An iterable dataset's state: how many of the epoch's samples the job had taken,
            # which holds for any world size (a resume with another one deals the rest anew).
            self.seed = int(resume["seed"])
            rank_world = _rank_and_world()
            if rank_world[1] != int(resume["world"]):
                self.consumed_before = int(resume["consumed"])
                self._set_order(iterable.order(loader._num_samples, self.seed, self.epoch, self.consumed_before,
                                               rank_world), 0)
                return
            self.consumed_before = int(resume.get("consumed_before", 0))
        if resume and resume.get("order") is not None:
            order = resume["order"]
            self.seed = int(resume["seed"])
            self._set_order(np.asarray(order.numpy() if isinstance(order, torch.Tensor) else order, dtype=np.int64),
                            int(resume["batches_yielded"]))
            return
        # As torch's _BaseDataLoaderIter: the sampler iterator, then the base seed (not again
        # for a persistent iterator); the indices come with the first next(), or now when
        # torch's workers would take their first indices now.
        self._sampler_iter = iter(loader.batch_sampler)
        if first:
            base_seed = torch.empty((), dtype=torch.int64).random_(generator=gen).item()
            if loader._pipe_seed is None:  # the first epoch of a loader without seed=
                loader._pipe_seed = base_seed & _SEED_MASK
        self.seed = loader._pipe_seed
        if loader.num_workers > 0:
            self._draw_order()

    def _draw_order(self) -> None:
        loader = self.loader
        if loader._data.iterable is not None:  # no sampler: the dataset kind's order for this rank
            self._set_order(loader._data.iterable.order(loader._num_samples, self.seed, self.epoch,
                                                        self.consumed_before), 0)
            return
        order = np.array([int(i) for batch in self._sampler_iter for i in batch], dtype=np.int64)
        gen = self.loader.generator
        # The state the next epoch's draws start from (what a resumed loader restores).
        self.generator_after = gen.get_state() if gen is not None else None
        self._set_order(order, 0)

    def _set_order(self, order: np.ndarray, start: int) -> None:
        loader = self.loader
        n = loader._num_samples
        if order.size and order.min() < 0:  # dataset[-1], as Python indexing
            order = np.where((order < 0) & (order >= -n), order + n, order)
        self.order = order
        bs = loader._batch_size
        self.num_batches = order.size // bs if loader._last_batch == "drop" else (order.size + bs - 1) // bs
        if not 0 <= start <= self.num_batches:
            raise ValueError(f"state's batch {start} is outside epoch {self.epoch} ({self.num_batches} batches)")
        # A batch with an index outside the dataset raises IndexError when its turn comes, as
        # torch's fetch does; the pipeline walks the other batches.
        out = (order < 0) | (order >= n)
        if out.any():
            self._bad = sorted({int(i) // bs for i in np.flatnonzero(out) if int(i) // bs < self.num_batches})
            keep = np.ones(order.size, dtype=bool)
            for k in self._bad:
                keep[k * bs:(k + 1) * bs] = False
            self._pipe_order = order[keep]
        else:
            self._pipe_order = order
        self.yielded = start
        if self.yielded >= self.num_batches:
            self._finish()
            return
        self._attach()

    def _pipe_batch(self, k: int) -> int:
        """The pipeline's batch number of loader batch k (the bad batches are not its)."""
        return k - sum(1 for b in self._bad if b < k)

    def _loader_batch(self, p: int) -> int:
        """Loader batch number of the pipeline's batch p."""
        k = p
        for b in self._bad:
            if b <= k:
                k += 1
        return k

    def _attach(self) -> None:
        """Positions a pipeline (the loader's, or its own once displaced) at this epoch and
        batch: it starts preparing this epoch's batches now, prefetch_depth ahead."""
        loader = self.loader
        if self._pipe_order.size == 0:
            self._pipe = None
            return
        if self.displaced:
            if self._own is None or self._own.seed != self.seed:
                self._own = loader._new_pipeline(self.seed)
            self._pipe = self._own
        else:
            self._pipe = loader._pipeline(self.seed)
        native = self._pipe._native
        # Position first (drops any work in flight), then the order.
        native.seek(self.epoch, self._pipe_batch(self.yielded))
        order_map = loader._order_map
        native.set_epoch_order(self.epoch, self._pipe_order if order_map is None else order_map[self._pipe_order])

    def __iter__(self) -> "_NativeIter":
        return self

    def __len__(self) -> int:
        loader = self.loader
        if loader._data.iterable is not None:  # this rank's batches, from its order (cheap to draw)
            if self.order is not None:
                return self.num_batches
            n = loader._data.iterable.order(loader._num_samples, self.seed, self.epoch, self.consumed_before).size
            bs = loader._batch_size
            return n // bs if loader._last_batch == "drop" else (n + bs - 1) // bs
        return len(self.loader.batch_sampler)

    def __next__(self):
        if self.finished:
            raise StopIteration
        if self.order is None:
            self._draw_order()  # torch's single-process iterator draws here
            if self.finished:
                raise StopIteration
        if self._pipe is None and self._pipe_order.size:
            self._attach()  # displaced: a pipeline of its own, positioned where it was
        if self.yielded >= self.num_batches:
            self._finish()
            raise StopIteration
        k = self.yielded
        if k in self._bad:
            self.yielded += 1
            if self.yielded >= self.num_batches:
                self._finish()
            bs = self.loader._batch_size
            bad = [int(i) for i in self.order[k * bs:(k + 1) * bs] if not 0 <= i < self.loader._num_samples]
            raise IndexError(f"index {bad[0]} is out of range for a dataset of {self.loader._num_samples} samples "
                             f"(batch {k} of the sampler)")
        pipe = self._pipe
        if self._timeout > 0 and not pipe._native.wait_next(self._timeout):
            raise RuntimeError(f"DataLoader timed out after {self._timeout:g} seconds")
        try:
            outputs = pipe.run()
        except StopIteration:
            self._finish()
            raise
        except BaseException:
            # A failed batch (DataError) is lost, as in torch: stay in step with the pipeline.
            try:
                epoch, consumed = pipe._native.position
            except Exception:
                epoch, consumed = None, 0
            if epoch == self.epoch:
                self.yielded = self._loader_batch(consumed)
                if self.yielded >= self.num_batches:
                    self._finish()
            raise
        self.yielded += 1
        # Per-image lists (sizes differ): stacked, as default_collate would (and fail).
        views = [torch.stack(v, 0) if isinstance(v, list) else v for v in outputs[:-1]]
        batch = [views if self.loader._multi_view else views[0], outputs[-1]]
        if self.loader._post is not None:
            batch = self._post_collate(batch, k)
        if self.loader._device is not None:
            batch = _apply(batch, self._to_device)
        elif self.loader._pin:
            # torch's own pinning: it also makes a list of a tuple batch (fast_collate's, MixUp's).
            batch = _pin_memory(batch, self.loader._pin_device)
        if self.yielded >= self.num_batches:
            self._finish()
        return batch  # default_collate makes a list of a batch of tuples

    def _post_collate(self, batch: List[Any], k: int) -> Any:
        """The collate_fn's f(*batch); one that draws random numbers (``seeded``) runs with
        torch's and Python's global RNGs seeded for this (seed, epoch, batch), as a worker
        process's would be, and restored after: MixUp's draws repeat with the seed and never
        shift the training script's own random numbers."""
        post = self.loader._post
        if not post.seeded:
            return post.f(*batch)
        state = np.random.SeedSequence([self.seed, self.epoch, k]).generate_state(2, dtype=np.uint64)
        py_state = random.getstate()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(state[0]) & _SEED_MASK)
            random.seed(int(state[1]))
            try:
                return post.f(*batch)
            finally:
                random.setstate(py_state)

    def _to_device(self, t: torch.Tensor) -> torch.Tensor:
        # A non_blocking copy is asynchronous only from pinned memory; torch's caching host
        # allocator keeps the pinned block until the copy is done.
        device = self.loader._device
        if t.device == device or (t.device.type == device.type == "cuda" and device.index is None):
            return t  # made there by the gpu stage
        if device.type == "cuda":
            t = t.pin_memory()
        return t.to(device, non_blocking=True)

    def _finish(self) -> None:
        if not self.finished:
            self.finished = True
            if not self.displaced:
                self.loader._epoch = self.epoch + 1
            if self._own is not None:  # its own threads are no longer needed
                self._own.close()
                self._own = None
            self._pipe = None

    def displace(self) -> None:
        """The loader's pipeline is no longer this iterator's (a newer iter(), or close()):
        its next next() builds one of its own and goes on from where it was."""
        if not self.displaced:
            self.displaced = True
            if self._own is None:
                self._pipe = None

    def __del__(self) -> None:
        own = getattr(self, "_own", None)
        if own is not None:
            own.close()
