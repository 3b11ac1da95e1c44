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
"""

from __future__ import annotations

import inspect
import logging
import os
import tempfile
import warnings
from typing import Any, Dict, Iterator, List, Optional

import torch
from torch.utils.data import BatchSampler, DataLoader
from torch.utils.data._utils.collate import default_collate

from ._transforms import Unsupported, image_graph, unwrap_dataset
from .pipeline import Pipeline
from . import fn

log = logging.getLogger("habana_dataloader")
_TORCH_PARAMS = set(inspect.signature(DataLoader.__init__).parameters) - {"self"}
_STATE_FORMAT = "habana-dataloader-state-v1"


class HabanaDataLoader:
    """``torch.utils.data.DataLoader``'s signature and defaults, plus keyword-only extras:

    Args:
        threads: worker threads of the native pipeline (default: num_workers if > 0, else
            one per CPU).
        device: "cuda[:N]" moves each batch there (non_blocking; pinned first); default: none.
        seed: fixes the augmentation seed, and seeds the shuffle order when no ``generator`` is
            given (default: drawn from ``generator`` or torch's global RNG each epoch, as torch
            draws its base seed, so torch.manual_seed reproduces runs).
        on_error: "raise" (a bad file raises habana_dataloader.DataError) or "skip" (replaced
            by the next sample, counted).
        strict: raise ValueError instead of falling back to torch.
    """

    def __init__(self, dataset, batch_size: Optional[int] = 1, shuffle: Optional[bool] = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: Optional[int] = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", threads: Optional[int] = None,
                 device: Optional[str] = None, seed: Optional[int] = None,
                 on_error: str = "raise", strict: bool = False):
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
        self._torch = DataLoader(**targs)
        if on_error not in ("raise", "skip"):
            raise ValueError(f"HabanaDataLoader() argument 'on_error' must be 'raise' or 'skip', got {on_error!r}")
        self.threads = threads if threads is not None else (num_workers if num_workers > 0 else 0)
        self.device, self.seed, self.on_error, self.strict = device, seed, on_error, strict
        self._prefetch = max(1, int(prefetch_factor or 2))
        self._epoch = 0
        self._iter: Optional[_NativeIter] = None
        self._resume: Optional[Dict[str, Any]] = None
        self._torch_yielded = 0
        self.fallback_reason: Optional[str] = None
        try:
            self._plan(args)
        except Unsupported as e:
            self.fallback_reason = str(e)
        except (ValueError, TypeError, RuntimeError) as e:  # the native graph did not build
            self.fallback_reason = f"the native pipeline could not be built: {e}"
        self.native = self.fallback_reason is None
        if not self.native:
            if strict:
                raise ValueError(f"HabanaDataLoader(strict=True) cannot run natively: {self.fallback_reason}")
            msg = f"HabanaDataLoader: using torch.utils.data.DataLoader because {self.fallback_reason}"
            log.warning(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)

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
        self._wire = image_graph(base.transform)
        self._batch_size = bs.batch_size
        # Build once on a one-file list: a mistake the C++ graph finds surfaces now.
        path = self._write_list([0])
        try:
            pipe = self._pipeline(path, seed=0)
            pipe.build()
            pipe.close()
        finally:
            os.unlink(path)

    def _write_list(self, order: List[int]) -> str:
        fd, path = tempfile.mkstemp(prefix="hdl_files_", suffix=".txt")
        samples, imap = self._samples, self._index_map
        with os.fdopen(fd, "w") as f:
            for i in order:
                p, label = samples[imap[i] if imap is not None else i]
                p = os.path.abspath(p)
                if "\n" in p:
                    raise Unsupported(f"a file name contains a newline: {p!r}")
                f.write(f"{p[1:]} {int(label)}\n")
        return path

    def _pipeline(self, file_list: str, seed: int) -> Pipeline:
        pipe = Pipeline(batch_size=self._batch_size, num_threads=self.threads,
                        prefetch_depth=self._prefetch, seed=seed, on_error=self.on_error)
        files, labels = fn.file_reader(file_list=file_list, file_root="/", shuffle=False,
                                       last_batch="partial")
        pipe.set_outputs(self._wire(files), labels)
        return pipe

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
            self._iter.close()
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
        loader with the same arguments resumes mid-epoch with exactly the remaining batches."""
        gen = self._torch.generator
        state: Dict[str, Any] = {"format": _STATE_FORMAT, "native": self.native, "epoch": self._epoch,
                                 "batches_yielded": 0, "generator": gen.get_state() if gen is not None else None}
        if not self.native:
            state["batches_yielded"] = self._torch_yielded
        elif self._iter is not None and not self._iter.finished:
            it = self._iter
            state.update(epoch=it.epoch, batches_yielded=it.yielded, seed=it.seed,
                         order=torch.tensor(it.order, dtype=torch.int64),
                         generator=it.generator_state)
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise ValueError("not a HabanaDataLoader.state_dict()")
        self._epoch = int(state["epoch"])
        gen = self._torch.generator
        if gen is not None and state.get("generator") is not None and "order" not in state:
            gen.set_state(state["generator"])
        self._resume = dict(state)

    def close(self) -> None:
        """Stops the native pipeline's threads now."""
        if self._iter is not None:
            self._iter.close()


class _NativeIter:
    """One epoch: the order from the batch sampler, a pipeline over it, batches as torch's."""

    def __init__(self, loader: HabanaDataLoader, resume: Optional[Dict[str, Any]]):
        self.loader = loader
        self.epoch = loader._epoch
        self.finished = False
        tl = loader._torch
        gen = tl.generator
        self.generator_state = gen.get_state() if gen is not None else None
        start = 0
        if resume and resume.get("order") is not None:
            self.order = [int(i) for i in resume["order"].tolist()]
            self.seed = int(resume["seed"])
            start = int(resume["batches_yielded"])
        else:
            # As torch's _BaseDataLoaderIter: sampler iterator, then the base seed, then indices.
            it = iter(tl.batch_sampler)
            base_seed = torch.empty((), dtype=torch.int64).random_(generator=gen).item()
            self.order = [int(i) for batch in it for i in batch]
            self.seed = loader.seed if loader.seed is not None else base_seed % (1 << 63)
        bs = loader._batch_size
        self.num_batches = (len(self.order) + bs - 1) // bs
        self.yielded = start
        self._pipe: Optional[Pipeline] = None
        self._path: Optional[str] = None
        if self.num_batches == 0:
            self._finish()
            return
        self._path = loader._write_list(self.order)
        self._pipe = loader._pipeline(self._path, self.seed)
        self._pipe.build()
        self._pipe._native.seek(self.epoch, start)
        cuda = torch.cuda.is_available()
        self._pin = bool(tl.pin_memory) and cuda
        if tl.pin_memory and not cuda and not getattr(loader, "_pin_warned", False):
            loader._pin_warned = True
            warnings.warn("pin_memory=True but no CUDA device: not pinning (as torch's DataLoader)")

    def __iter__(self) -> "_NativeIter":
        return self

    def __len__(self) -> int:
        return self.num_batches

    def __next__(self):
        if self.finished or self.yielded >= self.num_batches:
            self._finish()
            raise StopIteration
        try:
            images, labels = self._pipe.run()
        except StopIteration:
            self._finish()
            raise
        self.yielded += 1
        if isinstance(images, list):  # sizes differ per image: what default_collate would do
            images = torch.stack(images, 0)
        if self._pin:
            images, labels = images.pin_memory(), labels.pin_memory()
        if self.loader.device:
            images = images.to(self.loader.device, non_blocking=True)
            labels = labels.to(self.loader.device, non_blocking=True)
        if self.yielded >= self.num_batches:
            self._finish()
        return images, labels

    def _finish(self) -> None:
        if not self.finished:
            self.finished = True
            self.loader._epoch = self.epoch + 1
        self.close()

    def close(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None
        if self._path is not None:
            try:
                os.unlink(self._path)
            except OSError:
                pass
            self._path = None

    def __del__(self):
        self.close()
