"""Pipeline (graph + options -> batches) and the Habana-style MediaPipe.

    pipe = Pipeline(batch_size=64, num_threads=4, seed=42)
    with pipe:
        files, labels = fn.file_reader(file_root="data/train", shuffle=True)
        images = fn.image_decoder(files, random_crop="resized", resize=[224, 224])
        pipe.set_outputs(fn.crop_mirror_normalize(images, mean=[0.485, 0.456, 0.406],
                                                  std=[0.229, 0.224, 0.225]), labels)
    pipe.build()
    for images, labels in pipe:        # one epoch; dense outputs are torch tensors
        ...
"""

from __future__ import annotations

import atexit
import os
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from . import _C
from ._graph import DataNode, _Node, collect, pop_pipeline, push_pipeline, resolve_function, to_spec
from ._ops import schemas as _schemas

_live: "weakref.WeakSet[Pipeline]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # Worker threads must not wait for the GIL of an interpreter that is shutting down.
    for p in list(_live):
        p.close()


def _to_torch(x: Any, numpy: bool) -> Any:
    if x is None or numpy:
        return x
    if isinstance(x, list):
        return [_to_torch(e, numpy) for e in x]
    import torch.utils.dlpack
    return torch.utils.dlpack.from_dlpack(x)


def error_policy(on_error: Any, who: str) -> "_C.ErrorPolicy":
    """``on_error`` ("raise" / "skip") checked and converted once, at the edge that took it
    (``who``: "Pipeline", "HabanaDataLoader"), by the C++ parser; an ErrorPolicy passes."""
    if isinstance(on_error, _C.ErrorPolicy):
        return on_error
    if not isinstance(on_error, str):
        raise TypeError(f"{who}() argument 'on_error' must be str, got {type(on_error).__name__}")
    try:
        return _C.error_policy(on_error)
    except ValueError as e:
        raise ValueError(f"{who}(): {e}") from None


AUTO = "auto"  #: num_threads= / prefetch_depth= value: tuned while the pipeline runs


def auto_or_int(value: Any, name: str, lo: int, who: str) -> Any:
    """``num_threads`` / ``prefetch_depth`` checked once, at the edge that took it (``who``):
    "auto" or an int >= ``lo``; returned as given. TypeError / ValueError name the argument."""
    if value == AUTO and isinstance(value, str):
        return value
    if isinstance(value, str):
        raise ValueError(f"{who}() argument '{name}' must be an int >= {lo} or 'auto', got {value!r}")
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{who}() argument '{name}' must be int or 'auto', got {type(value).__name__}")
    if value < lo:
        raise ValueError(f"{who}() argument '{name}' must be >= {lo} or 'auto', got {value}")
    return value


def _native_count(value: Any) -> int:
    """A checked num_threads / prefetch_depth as hdl::PipelineOptions takes it ("auto": kAuto)."""
    return _C.AUTO if value == AUTO else value


def _device(device: Any) -> Tuple[str, Optional[int]]:
    """``Pipeline(device=)`` checked and converted once: ("cpu", None), or the device outputs
    are moved to as torch spells it and the CUDA device id of the gpu stage."""
    if device is None or device == "cpu":
        return "cpu", None
    import torch
    try:
        d = device if isinstance(device, torch.device) else torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"Pipeline() argument 'device' must be 'cpu' or 'cuda[:N]': {e}") from None
    if d.type == "cpu":
        return "cpu", None
    return str(d), (d.index or 0) if d.type == "cuda" else 0


def _is_batch_fn(n: _Node) -> bool:
    return n.op == "python_function" and bool(n.args.get("batch_processing", False))


class Pipeline:
    """A validated graph run by a pool of ``num_threads`` worker threads, ``prefetch_depth``
    batches ahead of the consumer. Deterministic: every random choice is a function of (seed,
    node name, epoch, sample position), whatever the thread count.

    Args:
        batch_size: samples per batch.
        num_threads: worker threads (0: one per CPU), or "auto": tuned while it runs from the
            measured rate of finished samples and the consumer's wait (starts at half the CPUs
            this process may use, grows while the consumer waits and each thread raises the
            rate; at most those CPUs, or ``max_threads``).
        prefetch_depth: batches prepared ahead (>= 1), or "auto": starts at 1 and grows by one
            when the consumer, having found batches ready, finds none ready (tf.data's rule),
            while prefetch_depth x batch bytes <= ``prefetch_memory_budget``.
        seed: seeds shuffling and every random operator.
        on_error: "raise" (a bad sample raises DataError naming operator, sample and file) or
            "skip" (it is replaced by the next readable sample and counted).
        max_failures: with "skip", failed samples tolerated in all before DataError.
        output: "torch" (zero-copy via DLPack) or "numpy" (zero-copy arrays).
        device: "cpu", or "cuda[:N]" (a string or a torch.device): nodes with ``stage="gpu"``
            (``device="gpu"`` in DALI's spelling) run there (the gpu stage:
            one CUDA stream, kernels per batch), and every output is a CUDA tensor on it, ordered
            on torch's current stream without blocking the host. A graph without gpu nodes
            moves its outputs there after each batch.
        cache_dir: a local directory caching the remote (s3://, http(s)://) objects read, shared
            by the processes of the machine naming it (default: $HDL_CACHE_DIR, else none).
        cache_limit: the most the cache holds: bytes, or "500M", "10G" (default:
            $HDL_CACHE_LIMIT, else 10 GiB). See media/cache_file_system.h.
        max_threads: with num_threads="auto", the most threads it may choose (None: the CPUs
            this process may use, ``available_cpus()``).
        prefetch_memory_budget: with prefetch_depth="auto", the bytes of batches it may hold
            ahead (None: 1 GiB).

    ``autotuned`` says what is in use (the choice, with "auto"); ``stats()`` has it as
    ``autotune_threads`` / ``autotune_prefetch_depth``.
    """

    def __init__(self, batch_size: int = 32, num_threads: Any = 0, prefetch_depth: Any = 2,
                 seed: int = 0, on_error: str = "raise", max_failures: int = 100, *,
                 output: str = "torch", device: str = "cpu", max_cached_bytes: Optional[int] = None,
                 cache_dir: Optional[str] = None, cache_limit: Any = None,
                 max_threads: Optional[int] = None, prefetch_memory_budget: Optional[int] = None):
        num_threads = auto_or_int(num_threads, "num_threads", 0, "Pipeline")
        prefetch_depth = auto_or_int(prefetch_depth, "prefetch_depth", 1, "Pipeline")
        for name, v, lo in (("batch_size", batch_size, 1), ("seed", seed, 0),
                            ("max_failures", max_failures, 0), ("max_threads", max_threads or 0, 0),
                            ("prefetch_memory_budget", prefetch_memory_budget or 1, 1)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"Pipeline() argument '{name}' must be int, got {type(v).__name__}")
            if v < lo:
                raise ValueError(f"Pipeline() argument '{name}' must be >= {lo}, got {v}")
        self._error_policy = error_policy(on_error, "Pipeline")
        if output not in ("torch", "numpy"):
            raise ValueError(f"Pipeline() argument 'output' must be 'torch' or 'numpy', got {output!r}")
        self.batch_size, self.num_threads, self.prefetch_depth = batch_size, num_threads, prefetch_depth
        self.seed, self.max_failures = seed, max_failures
        self.on_error = "skip" if self._error_policy == _C.ErrorPolicy.SKIP else "raise"
        self.device, self._device_id = _device(device)  # outputs go to device; the gpu stage runs on the id
        self.output, self.max_cached_bytes = output, max_cached_bytes
        self.max_threads, self.prefetch_memory_budget = max_threads, prefetch_memory_budget
        if cache_dir is not None and not isinstance(cache_dir, (str, os.PathLike)):
            raise TypeError(f"Pipeline() argument 'cache_dir' must be a path, got {type(cache_dir).__name__}")
        self.cache_dir = os.fspath(cache_dir) if cache_dir is not None else None
        self.cache_limit = _C.parse_byte_size(cache_limit) if cache_limit is not None else None
        self._outputs: Optional[List[DataNode]] = None
        self._native: Optional[_C.Pipeline] = None
        self._batch_fns: List[_Node] = []
        self._output_sources: List[Tuple[str, Any]] = []  # per output: ("native", index) or ("batch_fn", node)
        self._gpu_stage = False
        self.last_info: Dict[str, Any] = {}  #: epoch, batch_index, dataset_indices, ... of the last batch

    # ---- graph --------------------------------------------------------------------------
    def __enter__(self) -> "Pipeline":
        push_pipeline(self)
        return self

    def __exit__(self, *exc) -> None:
        pop_pipeline()

    def set_outputs(self, *outputs: DataNode) -> None:
        """Declares the pipeline's outputs (what each batch returns, in order)."""
        if self._native is not None:
            raise RuntimeError("the pipeline is built; outputs cannot change")
        if len(outputs) == 1 and isinstance(outputs[0], (list, tuple)):
            outputs = tuple(outputs[0])
        if not outputs:
            raise ValueError("a pipeline needs at least one output")
        self._outputs = list(outputs)
        to_spec(self._outputs)  # type checks now, at the caller's line

    def define(self, outputs: Any) -> "Pipeline":
        """``set_outputs`` for a DataNode, a sequence of them, or a callable returning them
        (called inside ``with self:``). Returns self."""
        if callable(outputs) and not isinstance(outputs, DataNode):
            with self:
                outputs = outputs()
        if isinstance(outputs, DataNode):
            outputs = (outputs,)
        self.set_outputs(*outputs)
        return self

    def to_json(self, indent: int = 2) -> str:
        """The graph as a JSON spec (no pickle): load with ``Pipeline.from_json``. A
        python_function is stored by its import path (module:qualname)."""
        spec, _, samples = to_spec(self._require_outputs())
        if samples:
            raise ValueError(f"reader \"{next(iter(samples))}\": its samples were given in memory (files=); "
                             "a JSON spec cannot hold them: write them as a file_list")
        return _C.spec_to_json(spec, indent)

    @classmethod
    def from_json(cls, text: str, functions: Optional[Dict[str, Callable]] = None,
                  **options: Any) -> "Pipeline":
        """A pipeline from ``to_json`` text; ``options`` are the constructor's arguments.
        ``functions`` maps python_function names to callables (default: import them).
        Malformed text raises ValueError naming the JSON path."""
        doc = _C.spec_from_json(text)
        functions = dict(functions or {})
        by_name: Dict[str, _Node] = {}
        for n in doc["nodes"]:
            fn_obj = None
            if n["op"] == "python_function":
                key = n["args"].get("function", "")
                fn_obj = functions[key] if key in functions else resolve_function(key)
            n_out = n["args"].get("num_outputs", 1) if n["op"] == "python_function" else None
            if n["op"] not in _schemas:
                raise ValueError(f"{n['op']} \"{n['name']}\": unknown operator")
            outs = ([f"output{k}" for k in range(n_out)] if n_out else [o[0] for o in _schemas[n["op"]]["outputs"]])
            by_name[n["name"]] = _Node(n["op"], [], n["args"], {}, n["name"], n["stage"], outs, fn_obj)
        for n in doc["nodes"]:
            node = by_name[n["name"]]
            node.inputs = [by_name[r["node"]].outputs[r["output"]] for r in n["inputs"]]
            node.arg_inputs = {k: by_name[r["node"]].outputs[r["output"]] for k, r in n["arg_inputs"].items()}
        pipe = cls(**options)
        pipe.set_outputs(*[by_name[r["node"]].outputs[r["output"]] for r in doc["outputs"]])
        return pipe

    # ---- running ------------------------------------------------------------------------
    def _require_outputs(self) -> List[DataNode]:
        if self._outputs is None:
            graph = getattr(self, "definegraph", None)
            if graph is None:
                raise RuntimeError("no outputs: call set_outputs()/define() (or override definegraph())")
            self.define(graph)
        return self._outputs

    def build(self) -> "Pipeline":
        """Validates the graph and starts the workers. ValueError/TypeError name the node and
        argument of any mistake. Idempotent."""
        if self._native is not None:
            return self
        outputs = self._require_outputs()
        nodes = collect(outputs)
        batch_fns = [n for n in nodes if _is_batch_fn(n)]
        native_outputs: List[DataNode] = []
        sources: List[Tuple[str, Any]] = []

        def native_index(d: DataNode) -> int:
            for i, o in enumerate(native_outputs):
                if o.node is d.node and o.index == d.index:
                    return i
            native_outputs.append(d)
            return len(native_outputs) - 1

        for n in nodes:
            for up in n.upstream():
                if _is_batch_fn(up):
                    raise ValueError(f"python_function \"{up.name or up.op}\" with batch_processing=True "
                                     "may only feed pipeline outputs")
        for d in outputs:
            sources.append(("batch_fn", d) if _is_batch_fn(d.node) else ("native", native_index(d)))
        for n in batch_fns:
            n.native_inputs = [native_index(d) for d in n.inputs]
        spec, functions, samples = to_spec(native_outputs)
        options = {"batch_size": self.batch_size, "num_threads": _native_count(self.num_threads),
                   "prefetch_depth": _native_count(self.prefetch_depth), "seed": self.seed,
                   "on_error": self._error_policy, "max_failures": self.max_failures,
                   "max_cached_bytes": self.max_cached_bytes, "cache_dir": self.cache_dir,
                   "cache_limit": self.cache_limit, "max_threads": self.max_threads,
                   "prefetch_memory_budget": self.prefetch_memory_budget}
        self._gpu_stage = any(n.stage in ("gpu", "mixed") for n in nodes)  # a device stage
        options["device_id"] = self._device_id or 0
        self._native = _C.Pipeline(spec, options, functions, samples)  # the one conversion to hdl::PipelineSpec
        self._batch_fns, self._output_sources = batch_fns, sources
        _live.add(self)
        return self

    def _native_or_build(self) -> "_C.Pipeline":
        if self._native is None:
            self.build()
        return self._native

    def run(self) -> Tuple[Any, ...]:
        """The next batch as a tuple, one entry per output: a tensor for a dense output, a
        list of per-sample tensors for a ragged one. Raises StopIteration at the end of an
        epoch (the next call starts the next epoch), DataError for a failed sample."""
        native = self._native_or_build()
        stream = None  # the consumer's stream: torch's current one orders after the gpu stage
        if self._gpu_stage and self.output == "torch":
            import torch
            if torch.cuda.is_available():
                stream = torch.cuda.current_stream(self._device_id or 0).cuda_stream
        got = native.next(self.output == "numpy", stream)
        if got is None:
            raise StopIteration
        raw, self.last_info = got
        values = [_to_torch(x, self.output == "numpy") for x in raw]
        if self.device != "cpu" and self.output == "torch":
            values = [v.to(self.device, non_blocking=True) if hasattr(v, "to") else
                      [e.to(self.device, non_blocking=True) for e in v] for v in values]
        results: Dict[int, Any] = {}
        out = []
        for kind, what in self._output_sources:
            if kind == "native":
                out.append(values[what])
                continue
            node = what.node
            if node.uid not in results:
                r = node.function(*[values[i] for i in node.native_inputs])
                results[node.uid] = r if len(node.outputs) > 1 else (r,)
            out.append(results[node.uid][what.index])
        return tuple(out)

    def __iter__(self) -> Iterator[Tuple[Any, ...]]:
        """The rest of the current epoch."""
        while True:
            try:
                batch = self.run()
            except StopIteration:
                return
            yield batch

    def __len__(self) -> int:
        """Batches per epoch."""
        return self._native_or_build().batches_per_epoch

    @property
    def epoch(self) -> int:
        return self._native_or_build().epoch

    def reset(self, epoch: int = 0) -> None:
        """Drops work in flight and starts ``epoch`` from its first batch."""
        self._native_or_build().reset(epoch)

    def set_epoch_order(self, epoch: int, order: Sequence[int]) -> None:
        """Makes ``epoch`` walk ``order`` (dataset indices, e.g. a torch sampler's, already
        sharded; a list, numpy array or tensor) instead of the reader's own shuffle and
        sharding; the reader's ``last_batch`` still applies. From the first call on, the
        pipeline never prefetches into an epoch whose order has not been given (``run()`` on
        one raises RuntimeError). Give it before the epoch's first batch (or after
        ``load_state_dict``, to resume); giving it again for the epoch in progress keeps the
        position and follows the new order from there. ValueError for an index outside the
        dataset."""
        self._native_or_build().set_epoch_order(int(epoch), order)

    def state_dict(self) -> Dict[str, Any]:
        """The position (epoch, batches consumed, failures) for resuming mid-epoch."""
        return {"format": "hdl-pipeline-state", "state": self._native_or_build().state()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues from ``state_dict()`` of a pipeline with the same graph, dataset, batch
        size and seed (RuntimeError otherwise); any thread count."""
        if not isinstance(state, dict) or "state" not in state:
            raise ValueError("not a Pipeline.state_dict()")
        self._native_or_build().load_state(state["state"])

    def stats(self) -> Dict[str, Any]:
        """Per-operator samples/failures/seconds and the operator's own counters (image_decoder:
        jpeg_index_files, jpeg_index_bytes, jpeg_index_hits, ...), batch and sample counts,
        consumer wait time, recent errors and buffer-pool counters."""
        return self._native_or_build().stats()

    @property
    def autotuned(self) -> Optional[Dict[str, int]]:
        """What runs now: {"num_threads": ..., "prefetch_depth": ...}, the tuner's current
        choice for an option set to "auto", else the option (0 threads resolved). None before
        build()."""
        if self._native is None:
            return None
        s = self._native.stats()
        return {"num_threads": s["autotune_threads"], "prefetch_depth": s["autotune_prefetch_depth"]}

    @property
    def output_names(self) -> List[str]:
        return self._native_or_build().output_names

    def dataset_info(self) -> Dict[str, Any]:
        """The reader's dataset: size, root, classes."""
        return self._native_or_build().dataset()

    def close(self) -> None:
        """Stops the workers now (also done when the pipeline is garbage collected)."""
        if self._native is not None:
            self._native.close()


class MediaPipe(Pipeline):
    """Habana's style: subclass, wire ``fn.*`` in ``definegraph()`` (return the outputs),
    then ``build()``, ``iter_init()`` at each epoch's start, ``run()`` until StopIteration.

        class Train(MediaPipe):
            def definegraph(self):
                files, labels = fn.file_reader(file_root=ROOT, shuffle=True)
                return fn.image_decoder(files, resize=[224, 224]), labels
    """

    def __init__(self, device: str = "cpu", prefetch_depth: int = 2, batch_size: int = 1,
                 num_threads: int = 1, seed: int = 0, **options: Any):
        super().__init__(batch_size=batch_size, num_threads=num_threads,
                         prefetch_depth=prefetch_depth, seed=seed, device=device, **options)
        self._consumed = 0
        self._started = False

    def definegraph(self):
        raise NotImplementedError("a MediaPipe subclass defines definegraph() returning its outputs")

    def iter_init(self) -> None:
        """Starts an epoch: the first call starts epoch 0; a call in the middle of an epoch
        abandons the rest of it and starts the next one."""
        native = self._native_or_build()
        if self._started and self._consumed:
            native.reset(native.epoch + 1)
        self._started = True
        self._consumed = 0

    def run(self) -> Tuple[Any, ...]:
        try:
            out = super().run()
        except StopIteration:
            self._consumed = 0
            raise
        self._consumed += 1
        return out
