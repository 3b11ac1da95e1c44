"""HabanaDataLoader: a drop-in for torch.utils.data.DataLoader.

A torchvision ImageFolder/DatasetFolder (or a Subset of one) whose transform the pipeline can
express runs natively: threads instead of worker processes, no pickling, no per-sample Python.
Anything else is a plain ``torch.utils.data.DataLoader`` built from the same arguments, and
the reason is logged and warned once (``.native``, ``.fallback_reason``; ``strict=True``
raises instead).

Native semantics: each epoch's index order comes from the loader's own sampler / batch
sampler (built by torch from the same arguments, iterated in Python), so shuffle=False is
torch's exact order, and RandomSampler, SubsetRandomSampler, DistributedSampler (set_epoch),
drop_last and generator behave as in torch. Labels are the dataset's own ``samples``.

One C++ pipeline serves the loader's whole life: its file list is the dataset in dataset
order (file list line i is ``dataset[i]``), and each ``iter(loader)`` hands it that epoch's
flattened batch order with ``set_epoch_order(epoch, order)``; the pipeline prefetches within
the epoch and is never rebuilt between epochs.
"""

from __future__ import annotations

import inspect
import logging
import os
import tempfile
import warnings
import weakref
from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader
from torch.utils.data._utils.collate import default_collate

from ._transforms import Unsupported, image_graph, unwrap_dataset
from .pipeline import Pipeline
from . import fn

log = logging.getLogger("habana_dataloader")
_TORCH_PARAMS = set(inspect.signature(DataLoader.__init__).parameters) - {"self"}
# v2: "generator" is the state the next epoch's draws start from (v1: the epoch's start when
# "order" is present), and "seed" is the loader's pipeline seed. v1 states still load.
_STATE_FORMAT = "habana-dataloader-state-v2"
_STATE_FORMATS = ("habana-dataloader-state-v1", _STATE_FORMAT)
_SEED_MASK = (1 << 63) - 1


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _resolve_device(device: Optional[str]) -> Optional[torch.device]:
    """None (stay on the CPU) or the device batches are moved to."""
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


class HabanaDataLoader:
    """``torch.utils.data.DataLoader``'s signature and defaults, plus keyword-only extras:

    Args:
        threads: worker threads of the native pipeline (default: num_workers if > 0, else
            one per CPU).
        device: "cuda[:N]" moves each batch there (pinned first, then a non_blocking copy);
            "auto": the GPU when CUDA is available, else stay on the CPU; default: none.
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
    """

    def __init__(self, dataset, batch_size: Optional[int] = 1, shuffle: Optional[bool] = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: Optional[int] = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", threads: Optional[int] = None,
                 device: Optional[str] = None, seed: Optional[int] = None,
                 on_error: str = "raise", strict: bool = False, jpeg_index_mb: int = 512):
        args = dict(dataset=dataset, batch_size=batch_size, shuffle=shuffle, sampler=sampler,
                    batch_sampler=batch_sampler, num_workers=num_workers, collate_fn=collate_fn,
                    pin_memory=pin_memory, drop_last=drop_last, timeout=timeout,
                    worker_init_fn=worker_init_fn, multiprocessing_context=multiprocessing_context,
                    generator=generator, prefetch_factor=prefetch_factor,
                    persistent_workers=persistent_workers, pin_memory_device=pin_memory_device)
        if seed is not None and generator is None:  # seed= also fixes the shuffle order
            args["generator"] = torch.Generator().manual_seed(int(seed))
        # torch validates the arguments and builds sampler / batch_sampler exactly as usual.
        targs = {k: v for k, v in args.items() if k in _TORCH_PARAMS and not (k == "prefetch_factor" and v is None)}
        # Its warnings (e.g. "will create 8 worker processes") are only true of the torch path:
        # recorded here, re-issued below if the loader falls back.
        with warnings.catch_warnings(record=True) as torch_warnings:
            warnings.simplefilter("always")
            self._torch = DataLoader(**targs)
        if on_error not in ("raise", "skip"):
            raise ValueError(f"HabanaDataLoader() argument 'on_error' must be 'raise' or 'skip', got {on_error!r}")
        if isinstance(jpeg_index_mb, bool) or not isinstance(jpeg_index_mb, int) or jpeg_index_mb < 0:
            raise ValueError(f"HabanaDataLoader() argument 'jpeg_index_mb' must be an int >= 0, got {jpeg_index_mb!r}")
        self.jpeg_index_mb = jpeg_index_mb
        self.threads = threads if threads is not None else (num_workers if num_workers > 0 else 0)
        self.device, self.seed, self.on_error, self.strict = device, seed, on_error, strict
        self._device = _resolve_device(device)
        # As torch's iterator: pin only with CUDA unless a pin_memory_device is named.
        self._pin_device = pin_memory_device or None
        self._pin = bool(pin_memory) and (torch.cuda.is_available() or self._pin_device is not None)
        self._pin_warn = bool(pin_memory) and not self._pin
        self._prefetch = max(1, int(prefetch_factor or 2))
        self._epoch = 0
        self._iter: Optional[_NativeIter] = None
        self._resume: Optional[Dict[str, Any]] = None
        self._torch_yielded = 0
        # The native pipeline: one per loader, built with _pipe_seed (None: the first epoch's
        # base seed). _pipelines_built counts C++ pipelines built, for tests and benchmarks.
        self._pipe: Optional[Pipeline] = None
        self._pipe_seed: Optional[int] = int(seed) & _SEED_MASK if seed is not None else None
        self._pipelines_built = 0
        self._list_path: Optional[str] = None
        self.fallback_reason: Optional[str] = None
        try:
            self._plan(args)
        except Unsupported as e:
            self.fallback_reason = str(e)
        except (ValueError, TypeError, RuntimeError) as e:  # the native graph did not build
            self.fallback_reason = f"the native pipeline could not be built: {e}"
        self.native = self.fallback_reason is None
        if not self.native:
            self._drop_pipeline()
            if strict:
                raise ValueError(f"HabanaDataLoader(strict=True) cannot run natively: {self.fallback_reason}")
            msg = f"HabanaDataLoader: using torch.utils.data.DataLoader because {self.fallback_reason}"
            log.warning(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            for w in torch_warnings:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    # ---- what runs natively -----------------------------------------------------------------
    def _plan(self, a: Dict[str, Any]) -> None:
        if a["batch_size"] is None and a["batch_sampler"] is None:
            raise Unsupported("batch_size=None (no automatic batching)")
        if a["collate_fn"] not in (None, default_collate):
            raise Unsupported("a collate_fn is given")
        bs = self._torch.batch_sampler
        if type(bs) is not BatchSampler:
            raise Unsupported(f"batch_sampler is a {type(bs).__name__}, not torch's BatchSampler")
        base, self._index_map = unwrap_dataset(a["dataset"])
        self._samples = base.samples
        self._wire = image_graph(base.transform, jpeg_index_mb=self.jpeg_index_mb)
        self._batch_size = bs.batch_size
        self._last_batch = "drop" if bs.drop_last else "partial"
        if len(a["dataset"]) == 0:
            raise Unsupported("the dataset is empty")
        # The file list, once: line i is dataset[i] (through any Subset), so the sampler's
        # indices are the pipeline's dataset indices. Kept while the loader lives (a pipeline
        # is rebuilt from it only to resume a state saved with another seed).
        self._list_path = self._write_list()
        weakref.finalize(self, _unlink, self._list_path)
        # Build now: a mistake the C++ graph finds surfaces here. With seed= this is the
        # loader's pipeline; otherwise its seed is drawn at the first epoch, as torch's.
        self._pipeline(self._pipe_seed if self._pipe_seed is not None else 0)
        if self._pipe_seed is None:
            self._drop_pipeline()

    def _write_list(self) -> str:
        fd, path = tempfile.mkstemp(prefix="hdl_files_", suffix=".txt")
        samples, imap = self._samples, self._index_map
        try:
            with os.fdopen(fd, "w") as f:
                for i in (imap if imap is not None else range(len(samples))):
                    p, label = samples[i]
                    p = os.path.abspath(p)
                    if "\n" in p:
                        raise Unsupported(f"a file name contains a newline: {p!r}")
                    f.write(f"{p[1:]} {int(label)}\n")
        except BaseException:
            _unlink(path)
            raise
        return path

    def _pipeline(self, seed: int) -> Pipeline:
        """The loader's pipeline with this seed: the one it has, or a new one (rare: the first
        epoch without seed=, close(), or a state saved with another seed)."""
        if self._pipe is not None and self._pipe.seed == seed:
            return self._pipe
        self._drop_pipeline()
        pipe = Pipeline(batch_size=self._batch_size, num_threads=self.threads,
                        prefetch_depth=self._prefetch, seed=seed, on_error=self.on_error)
        with pipe:
            files, labels = fn.file_reader(file_list=self._list_path, file_root="/", shuffle=False,
                                           last_batch=self._last_batch)
            pipe.set_outputs(self._wire(files), labels)
        pipe.build()
        self._pipelines_built += 1
        self._pipe = pipe
        return pipe

    def _drop_pipeline(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None

    # ---- DataLoader interface ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._torch)

    def __getattr__(self, name: str) -> Any:
        # dataset, batch_size, sampler, batch_sampler, drop_last, generator, ... as torch's.
        if name.startswith("__") or name == "_torch":
            raise AttributeError(name)
        return getattr(self._torch, name)

    def __iter__(self) -> Iterator[Any]:
        if not self.native:
            return self._torch_iter()
        resume, self._resume = self._resume, None
        if self._iter is not None:
            self._iter.detach()  # one pipeline per loader: the newest iterator owns it
        if self._pin_warn:
            self._pin_warn = False
            warnings.warn("HabanaDataLoader: pin_memory=True but CUDA is not available: batches are not pinned")
        self._iter = _NativeIter(self, resume)
        return self._iter

    def _torch_iter(self) -> Iterator[Any]:
        skip, self._resume = (self._resume or {}).get("batches_yielded", 0), None
        self._torch_yielded = 0
        for k, batch in enumerate(self._torch):
            self._torch_yielded = k + 1
            if k >= skip:
                yield batch
        self._epoch += 1
        self._torch_yielded = 0

    def state_dict(self) -> Dict[str, Any]:
        """The position, as torchdata's StatefulDataLoader: ``load_state_dict`` on a new
        loader with the same arguments resumes mid-epoch with exactly the remaining batches,
        and the epochs after it draw what this loader's would (from ``generator`` when one
        is given; torch's global RNG is the caller's to restore)."""
        gen = self._torch.generator
        state: Dict[str, Any] = {"format": _STATE_FORMAT, "native": self.native, "epoch": self._epoch,
                                 "batches_yielded": 0, "generator": gen.get_state() if gen is not None else None}
        if not self.native:
            state["batches_yielded"] = self._torch_yielded
            return state
        state["seed"] = self._pipe_seed
        it = self._iter
        if it is not None and not it.finished and not it.detached:
            state.update(epoch=it.epoch, batches_yielded=it.yielded, seed=it.seed,
                         order=torch.from_numpy(it.order.astype(np.int32 if it.order.size and 0 <= it.order.min()
                                                               and it.order.max() < 2**31 else np.int64)),
                         generator=it.generator_after)
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("format") not in _STATE_FORMATS:
            raise ValueError("not a HabanaDataLoader.state_dict()")
        self._epoch = int(state["epoch"])
        gen = self._torch.generator
        v1_mid_epoch = state["format"] != _STATE_FORMAT and "order" in state
        if gen is not None and state.get("generator") is not None and not v1_mid_epoch:
            gen.set_state(state["generator"])
        if self.native and state.get("seed") is not None:  # the pipeline seed it ran with
            self._pipe_seed = int(state["seed"])
        self._resume = dict(state)

    def close(self) -> None:
        """Stops the native pipeline's threads now (a later ``iter()`` builds it again)."""
        if self._iter is not None:
            self._iter.detach()
        self._drop_pipeline()


class _NativeIter:
    """One epoch: the order from the batch sampler, given to the loader's pipeline, batches as
    torch's."""

    def __init__(self, loader: HabanaDataLoader, resume: Optional[Dict[str, Any]]):
        self.loader = loader
        self.epoch = loader._epoch
        self.finished = False
        self.detached = False
        gen = loader._torch.generator
        start = 0
        if resume and resume.get("order") is not None:
            order = resume["order"]
            self.order = np.asarray(order.numpy() if isinstance(order, torch.Tensor) else order, dtype=np.int64)
            self.seed = int(resume["seed"])
            start = int(resume["batches_yielded"])
        else:
            # As torch's _BaseDataLoaderIter: sampler iterator, then the base seed, then indices.
            it = iter(loader._torch.batch_sampler)
            base_seed = torch.empty((), dtype=torch.int64).random_(generator=gen).item()
            self.order = np.array([int(i) for batch in it for i in batch], dtype=np.int64)
            if self.order.size and self.order.min() < 0:  # dataset[-1], as Python indexing
                self.order = np.where(self.order < 0, self.order + len(loader._torch.dataset), self.order)
            if loader._pipe_seed is None:  # the first epoch of a loader without seed=
                loader._pipe_seed = base_seed & _SEED_MASK
            self.seed = loader._pipe_seed
        # The state the next epoch's draws start from (what a resumed loader restores).
        self.generator_after = gen.get_state() if gen is not None else None
        bs = loader._batch_size
        n = int(self.order.size)
        self.num_batches = n // bs if loader._last_batch == "drop" else (n + bs - 1) // bs
        if not 0 <= start <= self.num_batches:
            raise ValueError(f"state's batch {start} is outside epoch {self.epoch} ({self.num_batches} batches)")
        self.yielded = start
        self._pipe: Optional[Pipeline] = None
        if self.yielded >= self.num_batches:
            self._finish()
            return
        self._pipe = loader._pipeline(self.seed)
        native = self._pipe._native
        # Position first (drops any work in flight), then the order: the pipeline starts
        # preparing this epoch's batches now, prefetch_depth ahead.
        native.seek(self.epoch, start)
        native.set_epoch_order(self.epoch, self.order)
        self._pin, self._pin_device, self._device = loader._pin, loader._pin_device, loader._device

    def __iter__(self) -> "_NativeIter":
        return self

    def __len__(self) -> int:
        return self.num_batches

    def __next__(self):
        if self.detached:
            raise RuntimeError("this HabanaDataLoader iterator was replaced by a newer iter() of the same "
                               "loader (or the loader was closed): a loader runs one epoch at a time")
        if self.finished or self.yielded >= self.num_batches:
            self._finish()
            raise StopIteration
        try:
            images, labels = self._pipe.run()
        except StopIteration:
            self._finish()
            raise
        except BaseException:
            # A failed batch (DataError) is lost, as in torch: stay in step with the pipeline.
            try:
                epoch, consumed = self._pipe._native.position
            except Exception:
                epoch, consumed = None, 0
            if epoch == self.epoch:
                self.yielded = consumed
                if self.yielded >= self.num_batches:
                    self._finish()
            raise
        self.yielded += 1
        if isinstance(images, list):  # sizes differ per image: what default_collate would do
            images = torch.stack(images, 0)
        if self._device is not None:
            images, labels = self._to_device(images), self._to_device(labels)
        elif self._pin:
            images, labels = self._pinned(images), self._pinned(labels)
        if self.yielded >= self.num_batches:
            self._finish()
        return images, labels

    def _pinned(self, t: torch.Tensor) -> torch.Tensor:
        return t.pin_memory(self._pin_device) if self._pin_device else t.pin_memory()

    def _to_device(self, t: torch.Tensor) -> torch.Tensor:
        # A non_blocking copy is asynchronous only from pinned memory; torch's caching host
        # allocator keeps the pinned block until the copy is done.
        if self._device.type == "cuda":
            t = t.pin_memory()
        return t.to(self._device, non_blocking=True)

    def _finish(self) -> None:
        if not self.finished:
            self.finished = True
            if not self.detached:
                self.loader._epoch = self.epoch + 1

    def detach(self) -> None:
        """The loader's pipeline is no longer this iterator's (a newer iter(), or close())."""
        self.detached = True
        self._pipe = None

    def close(self) -> None:
        self.detach()
