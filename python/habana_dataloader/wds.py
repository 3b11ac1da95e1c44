"""WebDataset tar shards as a torch IterableDataset, with webdataset's fluent interface.

    import habana_dataloader as hdl
    ds = (hdl.WebDataset("shards/train-{000000..000009}.tar", shardshuffle=100, seed=0,
                         nodesplitter=hdl.wds.split_by_node)
          .shuffle(1000).decode("pil").to_tuple("jpg;png", "cls").map_tuple(transform, None))
    loader = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=8)

Yields what ``webdataset.WebDataset`` (1.0.2) yields for the same calls, without needing the
webdataset package: the same shard lists, splits, groupings, decoders, shuffles (equal
seeds give equal orders) and collation. ``ds.stages`` records the fluent calls as
``Stage(name, args)`` so that the native path can map a pipeline onto C++ operators.
"""

from __future__ import annotations

import copy
import os
import random
import sys
import time
from itertools import islice
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional

import numpy as np
import torch
from torch.utils.data import IterableDataset

from . import _C
from ._wds_decode import Decoder, ImageHandler, basichandlers
from ._wds_source import StopShards, brace_expand, expand_urls, shard_samples, worker_info

__all__ = ["WebDataset", "Stage", "split_by_node", "split_by_worker", "single_node_only", "brace_expand",
           "reraise_exception", "warn_and_continue", "ignore_and_continue", "default_collation_fn", "Decoder",
           "ImageHandler", "basichandlers"]


class Stage(NamedTuple):
    """One recorded fluent call: its name ("shuffle", "decode", "to_tuple", ...) and arguments."""
    name: str
    args: Dict[str, Any]


# --- handlers and splitters (webdataset's names and behaviour) -----------------------------

def reraise_exception(exn: Exception) -> bool:
    raise exn


def warn_and_continue(exn: Exception) -> bool:
    import warnings
    warnings.warn(repr(exn))
    time.sleep(0.5)  # as webdataset: keeps a flood of warnings readable
    return True


def ignore_and_continue(exn: Exception) -> bool:
    return True


def single_node_only(src: Iterable[Any], group: Any = None) -> Iterator[Any]:
    """webdataset's default nodesplitter: refuses to run with several ranks."""
    if worker_info()[1] > 1:
        raise ValueError("WebDataset: several torch.distributed ranks but nodesplitter=single_node_only (the "
                         "default, as in webdataset): pass nodesplitter=habana_dataloader.wds.split_by_node")
    yield from src


def split_by_node(src: Iterable[Any], group: Any = None) -> Iterator[Any]:
    """Shards rank, rank + world_size, ... (each rank its own, unequal when the count does not divide)."""
    rank, world, _, _ = worker_info()
    yield from (islice(src, rank, None, world) if world > 1 else src)


def split_by_worker(src: Iterable[Any]) -> Iterator[Any]:
    """Shards worker, worker + num_workers, ... of the rank's shards (torch DataLoader workers)."""
    _, _, worker, workers = worker_info()
    yield from (islice(src, worker, None, workers) if workers > 1 else src)


# --- stage bodies ----------------------------------------------------------------------------

def _pick(buf: List[Any], rng: random.Random) -> Any:
    k = rng.randint(0, len(buf) - 1)
    sample = buf[k]
    buf[k] = buf[-1]
    buf.pop()
    return sample


def _shuffle(data: Iterator[Any], bufsize: int = 1000, initial: int = 100, rng: Optional[random.Random] = None,
             seed: Any = None) -> Iterator[Any]:
    """webdataset's buffer shuffle, draw for draw (so equal seeds give equal orders)."""
    if seed is not None:
        rng = random.Random(seed)
    elif rng is None:
        rng = random.Random(int((os.getpid() + time.time()) * 1e9))
    initial = min(initial, bufsize)
    buf: List[Any] = []
    for sample in data:
        buf.append(sample)
        if len(buf) < bufsize:
            try:
                buf.append(next(data))
            except StopIteration:
                pass
        if len(buf) >= initial:
            yield _pick(buf, rng)
    while buf:
        yield _pick(buf, rng)


class _DetShuffle:
    """shardshuffle with detshuffle=True: seeded by seed + epoch (epochs counted per process)."""

    def __init__(self, bufsize: int, seed: Any):
        self.bufsize, self.seed, self.epoch = bufsize, seed, -1

    def __call__(self, data: Iterator[Any]) -> Iterator[Any]:
        self.epoch += 1
        rng = random.Random()
        rng.seed(self.seed + self.epoch)
        return _shuffle(data, self.bufsize, 100, rng)


def _getfirst(sample: Dict[str, Any], keys: Any, missing_is_error: bool = True) -> Any:
    keys = keys.split(";") if isinstance(keys, str) else keys
    for k in keys:
        if k in sample:
            return sample[k]
    if missing_is_error:
        raise ValueError(f"sample {sample.get('__key__')!r} of {sample.get('__url__')!r}: none of {keys} in "
                         f"its fields {[k for k in sample if not k.startswith('__')]}")
    return None


def _combine(values: List[Any]) -> Any:
    if isinstance(values[0], (int, float)):
        return np.array(values)
    if isinstance(values[0], (torch.Tensor, np.ndarray)):
        shapes = {tuple(x.shape) for x in values}
        if len(shapes) != 1:
            raise ValueError(f"batched(): all shapes must be equal in collation, got {shapes}")
        return torch.stack(values) if isinstance(values[0], torch.Tensor) else np.array(values)
    return list(values)


def default_collation_fn(samples: List[Any]) -> Any:
    """webdataset's collation: numbers -> numpy array, tensors -> stacked, arrays -> array, else a list."""
    rows = [s if isinstance(s, dict) else dict(enumerate(s)) for s in samples]
    keys = set(rows[0])
    if any(set(r) != keys for r in rows[1:]):
        raise ValueError("batched(): keys don't match in different samples")
    out = {k: _combine([r[k] for r in rows]) for k in keys}
    return out if isinstance(samples[0], dict) else tuple(out[i] for i in range(1 + max(out)))


def _mapped(data: Iterator[Any], f: Callable[[Any], Any], handler: Callable, keep_key: bool) -> Iterator[Any]:
    for sample in data:
        try:
            result = f(sample)
        except Exception as e:
            if handler(e):
                continue
            break
        if result is None:
            continue
        if keep_key and isinstance(sample, dict) and isinstance(result, dict):
            result["__key__"] = sample.get("__key__")
        yield result


def _tuple_fn(fs: List[Callable]) -> Callable[[Any], Any]:
    def apply(sample: Any) -> Any:
        if not isinstance(sample, (list, tuple)):
            raise TypeError(f"map_tuple(): samples must be tuples (call to_tuple first), got {type(sample).__name__}")
        out = list(sample)
        for i in range(min(len(fs), len(out))):
            out[i] = fs[i](out[i])
        return tuple(out)
    return apply


def _batched(data: Iterator[Any], batchsize: int, collation_fn: Optional[Callable], partial: bool) -> Iterator[Any]:
    batch: List[Any] = []
    for sample in data:
        if len(batch) >= batchsize:
            yield collation_fn(batch) if collation_fn is not None else batch
            batch = []
        batch.append(sample)
    if batch and (len(batch) == batchsize or partial):
        yield collation_fn(batch) if collation_fn is not None else batch


def _unbatched(data: Iterator[Any]) -> Iterator[Any]:
    for b in data:
        if isinstance(b, (list, tuple)):
            yield from (tuple(x[i] for x in b) for i in range(len(b[0])))
        else:
            yield from ({k: v[i] for k, v in b.items()} for i in range(len(next(iter(b.values())))))


def _run(stage: Stage, data: Iterator[Any]) -> Iterator[Any]:
    a = stage.args
    n = stage.name
    if n == "shuffle":
        return _shuffle(data, a["size"], a["initial"], a["rng"], a["seed"])
    if n == "decode":
        return _mapped(data, a["decoder"], a["handler"], True)
    if n == "map":
        return _mapped(data, a["f"], a["handler"], True)
    if n == "map_dict":
        fs = a["fs"]
        return _mapped(data, lambda s: {**s, **{k: f(s[k]) for k, f in fs.items()}}, a["handler"], True)
    if n == "map_tuple":
        return _mapped(data, _tuple_fn([f if f is not None else (lambda x: x) for f in a["fs"]]), a["handler"], False)
    if n == "to_tuple":
        keys, strict = a["keys"], a["missing_is_error"]

        def pick(s: Dict[str, Any]) -> tuple:
            r = tuple(_getfirst(s, k, strict) for k in keys)
            if a["none_is_error"] and any(x is None for x in r):
                raise ValueError(f"to_tuple {keys} got {s.keys()}")
            return r
        return _mapped(data, pick, a["handler"], False)
    if n == "rename":
        kw = a["names"]
        gone = {x for v in kw.values() for x in (v.split(";") if isinstance(v, str) else v)}
        return _mapped(data, lambda s: ({k: v for k, v in s.items() if k not in gone} if a["keep"] else {})
                       | {k: _getfirst(s, v) for k, v in kw.items()}, a["handler"], False)
    if n == "select":
        return (s for s in data if a["predicate"](s))
    if n == "batched":
        return _batched(data, a["batchsize"], a["collation_fn"], a["partial"])
    if n == "unbatched":
        return _unbatched(data)
    raise AssertionError(n)


class WebDataset(IterableDataset):
    """Samples of WebDataset tar shards, as ``webdataset.WebDataset`` yields them.

    ``urls``: a shard spec ("train-{000000..000009}.tar", "a.tar::b-{0..3}.tar", ${X} from
    $WDS_X), or a list of them (each expanded too; webdataset takes a list literally, which is
    the same for names without braces). Local paths and file:// URLs; .tar, .tar.gz, ... .

    A sample is the run of consecutive members sharing a key (the member path up to the first
    dot of its file name): a dict of field (the rest of the name, lower-cased) -> bytes, plus
    ``__key__``, ``__url__`` and ``__local_path__``. Members named ``__*__`` are skipped.

    Per epoch (each ``iter``): shards -> ``nodesplitter`` (default ``single_node_only``, which
    refuses several ranks, as webdataset 1.0.2; pass ``split_by_node`` for rank r to take
    shards r, r + world_size, ...) -> ``workersplitter`` (``split_by_worker``: torch
    DataLoader worker w of n takes every n-th of those) -> ``shardshuffle`` (a buffer of that
    many shards, seeded by ``seed``: the same order every epoch, unless ``detshuffle=True``,
    which seeds with seed + epoch) -> samples. Ranks and workers come from RANK / WORLD_SIZE
    (else torch.distributed) and WORKER / NUM_WORKERS (else torch's worker info). This split is
    webdataset's: ranks get unequal sample counts when shards differ in size or do not divide
    evenly, and an epoch cannot resume mid-way. HabanaDataLoader, reading the same object,
    gives the exact split (equal samples per rank, every sample once per epoch) and resumes
    from a state dict.

    Errors: a shard that is not a tar, truncated or unreadable raises ``DataError`` naming the
    shard and the member and byte offset where known; ``handler`` (webdataset's contract:
    return True to go on with the next shard, False to end the epoch, or raise) decides.
    ``empty_check``: an epoch (of this worker) without samples is a ValueError.

    ``cache_dir`` / ``cache_limit`` (bytes, or "500M", "10G"): when HabanaDataLoader reads
    this dataset natively, remote shards (http(s)://, s3://) are cached in that local directory,
    shared by the ranks and processes of the machine (media/cache_file_system.h; default:
    $HDL_CACHE_DIR / $HDL_CACHE_LIMIT, else none).

    ``native_mode`` (not webdataset's) is how HabanaDataLoader reads the shards natively:
    "indexed" (plain .tar: every sample read directly, an exact global shuffle), "streaming"
    (every shard front to back, shuffled shards and ``.shuffle(n)``'s buffer of n samples;
    ``with_epoch(n)`` is then n samples per rank, read without counting first), or "auto"
    (streaming when a shard is compressed, .tar.gz and the like, else indexed). torch's
    DataLoader ignores it.

    Fluent calls return a new dataset with one more recorded ``Stage(name, args)`` in
    ``stages``: shuffle, decode, map, map_dict, map_tuple, to_tuple, rename, select, batched,
    unbatched. ``with_epoch`` and ``with_length`` change this object, as in webdataset.
    """

    def __init__(self, urls: Any, *, shardshuffle: Any = False, seed: Any = None, detshuffle: bool = False,
                 nodesplitter: Optional[Callable] = single_node_only,
                 workersplitter: Optional[Callable] = split_by_worker,
                 handler: Callable[[Exception], bool] = reraise_exception,
                 select_files: Optional[Callable[[str], bool]] = None,
                 rename_files: Optional[Callable[[str], str]] = None, empty_check: bool = True,
                 cache_dir: Optional[str] = None, cache_limit: Any = None, native_mode: str = "auto"):
        super().__init__()
        if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
            raise TypeError(f"WebDataset(cache_dir=...) must be a path, got {type(cache_dir).__name__}")
        self.cache_dir: Optional[str] = os.fspath(cache_dir) if cache_dir is not None else None
        self.cache_limit: Optional[int] = _C.parse_byte_size(cache_limit) if cache_limit is not None else None
        self.urls: List[str] = expand_urls(urls)
        if shardshuffle is True:
            shardshuffle = 100  # webdataset's value for True
        if shardshuffle is not None and not isinstance(shardshuffle, int):
            raise TypeError(f"WebDataset(shardshuffle=...) takes a shard buffer size (int) or False, got {shardshuffle!r}")
        self.shardshuffle: int = int(shardshuffle or 0)
        self.seed = os.environ.get("WDS_SEED", random.randint(0, 1000000)) if seed is None else seed
        self.seed_given = seed is not None or "WDS_SEED" in os.environ  # the same on every rank
        self.detshuffle = detshuffle
        self.nodesplitter, self.workersplitter = nodesplitter, workersplitter
        self.handler, self.select_files, self.rename_files = handler, select_files, rename_files
        self.empty_check = empty_check
        self.stages: List[Stage] = []
        self.nsamples = -1  # with_epoch
        self.repetitions = 1
        self._det = _DetShuffle(self.shardshuffle, self.seed) if detshuffle else None
        if native_mode not in ("auto", "indexed", "streaming"):
            raise ValueError(f"WebDataset(native_mode=...) is 'auto', 'indexed' or 'streaming', got {native_mode!r}")
        self.native_mode = native_mode

    # -- iteration ---------------------------------------------------------------------------

    def _shards(self) -> Iterator[str]:
        src: Iterator[Any] = iter({"url": u} for u in self.urls)  # dicts, so webdataset's splitters fit
        if self.nodesplitter is not None:
            src = iter(self.nodesplitter(src))
        if self.workersplitter is not None:
            src = iter(self.workersplitter(src))
        if self.shardshuffle > 0:
            src = self._det(src) if self._det is not None else _shuffle(src, self.shardshuffle, 100, None, self.seed)
        for s in src:
            yield s["url"] if isinstance(s, dict) else s

    def _samples(self) -> Iterator[Any]:
        count = 0
        try:
            for url in self._shards():
                for sample in shard_samples(url, self.handler, self.select_files, self.rename_files):
                    count += 1
                    yield sample
        except StopShards:
            return
        if count == 0 and self.empty_check:
            raise ValueError("WebDataset: no samples found in this epoch; perhaps fewer shards than DataLoader "
                             f"workers x ranks ({len(self.urls)} shards). empty_check=False turns this off.")

    def _epoch(self) -> Iterator[Any]:
        data: Iterator[Any] = self._samples()
        for stage in self.stages:
            data = _run(stage, data)
        return data

    def _epochs(self) -> Iterator[Any]:
        for _ in range(self.repetitions):
            count = 0
            for sample in self._epoch():
                count += 1
                yield sample
            if count == 0:
                break

    def __iter__(self) -> Iterator[Any]:
        if self.repetitions != 1 and self.nsamples > 0:
            return islice(self._epochs(), self.nsamples)
        return self._epochs()

    # -- fluent interface --------------------------------------------------------------------

    def _with(self, name: str, **args: Any) -> "WebDataset":
        out = copy.copy(self)
        out.stages = [*self.stages, Stage(name, args)]
        return out

    def shuffle(self, size: int, initial: int = 100, rng: Optional[random.Random] = None,
                seed: Any = None) -> "WebDataset":
        """A sample buffer shuffle (webdataset's: ``seed`` or ``rng`` for repeatable orders,
        else seeded from the process id and time); ``size < 1``: no shuffle."""
        if size < 1:
            return copy.copy(self)
        return self._with("shuffle", size=size, initial=initial, rng=rng, seed=seed)

    def decode(self, *handlers: Any, pre: Optional[List[Callable]] = None, post: Optional[List[Callable]] = None,
               only: Any = None, partial: bool = False, handler: Callable = reraise_exception) -> "WebDataset":
        """Decode fields: image specs ("pil", "rgb8", "torchrgb", "l", ...: IMAGE_SPECS) and
        callables f(key, data) first, then the extension table (cls, txt, json, pyd, npy, ...)."""
        decoder = Decoder(list(handlers), pre=pre, post=post, only=only, partial=partial)
        return self._with("decode", handlers=handlers, pre=pre, post=post, only=only, partial=partial,
                          handler=handler, decoder=decoder)

    def map(self, f: Callable[[Any], Any], handler: Callable = reraise_exception) -> "WebDataset":
        return self._with("map", f=f, handler=handler)

    def map_dict(self, handler: Callable = reraise_exception, **fs: Callable[[Any], Any]) -> "WebDataset":
        return self._with("map_dict", fs=fs, handler=handler)

    def map_tuple(self, *fs: Optional[Callable[[Any], Any]], handler: Callable = reraise_exception) -> "WebDataset":
        for f in fs:
            if f is not None and not callable(f):
                raise TypeError(f"map_tuple(): {f!r} is not callable")
        return self._with("map_tuple", fs=fs, handler=handler)

    def to_tuple(self, *keys: Any, handler: Callable = reraise_exception, missing_is_error: bool = True,
                 none_is_error: Optional[bool] = None) -> "WebDataset":
        """Fields as a tuple: each key names a field, "jpg;png" the first present of several."""
        if len(keys) == 1 and isinstance(keys[0], str) and " " in keys[0]:
            keys = tuple(keys[0].split())
        return self._with("to_tuple", keys=keys, handler=handler, missing_is_error=missing_is_error,
                          none_is_error=missing_is_error if none_is_error is None else none_is_error)

    def rename(self, handler: Callable = reraise_exception, keep: bool = True, **names: Any) -> "WebDataset":
        return self._with("rename", names=names, keep=keep, handler=handler)

    def select(self, predicate: Callable[[Any], bool]) -> "WebDataset":
        return self._with("select", predicate=predicate)

    def batched(self, batchsize: int, collation_fn: Optional[Callable] = default_collation_fn,
                partial: bool = True) -> "WebDataset":
        return self._with("batched", batchsize=batchsize, collation_fn=collation_fn, partial=partial)

    def unbatched(self) -> "WebDataset":
        return self._with("unbatched")

    def with_epoch(self, nsamples: int = -1, nbatches: int = -1) -> "WebDataset":
        """An epoch of exactly max(nsamples, nbatches) items, cycling through the shards."""
        self.repetitions = sys.maxsize
        self.nsamples = max(nsamples, nbatches)
        return self

    def with_length(self, n: int, silent: bool = False) -> "WebDataset":
        """Sets len() only (it does not change the epoch), as webdataset."""
        if not silent:
            import warnings
            warnings.warn(".with_length() only sets the value of __len__; it does not change the number of samples")
        self.size = n
        self.__class__ = _WebDatasetWithLength
        return self

    def __repr__(self) -> str:
        first = self.urls[0] + (f" ... ({len(self.urls)} shards)" if len(self.urls) > 1 else "")
        return f"WebDataset({first!r}, stages={[s.name for s in self.stages]})"


class _WebDatasetWithLength(WebDataset):
    def __len__(self) -> int:
        return self.size
