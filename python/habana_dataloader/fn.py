"""``fn``: one function per operator, generated at import time from the operator schemas.

    files, labels = fn.file_reader(file_root="train", shuffle=True)
    images = fn.image_decoder(files, output_type="rgb")
    images = fn.resize(images, size=256)
    flip = fn.coin_flip(probability=0.5)
    images = fn.flip(images, horizontal=flip)      # a per-sample argument input

Positional arguments are the operator's inputs; keyword arguments its arguments (a DataNode
for a per-sample argument input); ``name=`` names the node (and keys its random stream);
``device=`` picks the stage ("cpu", "mixed", "gpu"). Each function's docstring is the
operator's reference entry (docs/operators.md). Mistakes raise at the call: TypeError for an
unknown argument, a wrong type or a wrong number of inputs; ValueError for a bad value.
``fn.python_function(*inputs, function=f)`` runs a Python callable (see its docstring).

Habana MediaPipe's video names, ``fn.ReadVideoDatasetFromDir`` and ``fn.VideoDecoder``, keep
MediaPipe's convention (construct with arguments, call in ``definegraph``) and map onto
``video_reader``; their docstrings give the mapping argument by argument.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from . import _C
from ._graph import DataNode, _Node, function_name

__all__: List[str] = []

_STAGES = {"cpu": "cpu", "mixed": "mixed", "gpu": "gpu", "cuda": "gpu", "hpu": "gpu", "device": "gpu"}

#: name -> schema dict (from the C++ registry, plus python_function)
schemas: Dict[str, dict] = {s["name"]: s for s in _C.schemas()}


def _stage(device: Any) -> str:
    key = str(device).split(":")[0].lower()
    if key not in _STAGES:
        raise ValueError(f"argument 'device' must be one of cpu, mixed, gpu, got {device!r}")
    return _STAGES[key]


def _samples(op: str, constants: Dict[str, Any], takes_segments: bool) -> Optional["_C.Samples"]:
    """A reader's ``files=`` / ``labels=`` (DALI's names) and, for video_reader,
    ``segments=``, taken out of its arguments: the samples in memory, handed to the pipeline
    as a typed object (no file list on disk, no JSON). ``files``: paths, relative to
    ``file_root`` when given; ``labels``: one int per file (default: each file's index);
    ``segments``: one (start, end) per file, in seconds (end None: the video's end)."""
    files = constants.pop("files", None)
    labels = constants.pop("labels", None)
    segments = constants.pop("segments", None) if takes_segments else None
    if files is None:
        for name, value in (("labels", labels), ("segments", segments)):
            if value is not None:
                raise TypeError(f"{op}() argument '{name}' needs 'files'")
        return None
    if isinstance(files, _C.Samples):
        for name, value in (("labels", labels), ("segments", segments)):
            if value is not None:
                raise TypeError(f"{op}() argument '{name}' is part of the Samples given as 'files'")
        return files
    if isinstance(files, (str, bytes)) or not hasattr(files, "__iter__"):
        raise TypeError(f"{op}() argument 'files' must be a sequence of paths, got {type(files).__name__}")
    if constants.get("file_list"):
        raise TypeError(f"{op}() takes 'files' or 'file_list', not both")
    return _C.Samples(files, labels, str(constants.get("file_root", "") or ""), segments)


def _make(schema: dict) -> Callable:
    op = schema["name"]
    per_sample = {a["name"] for a in schema["args"] if a["per_sample"]}
    n_inputs = len(schema["inputs"])
    output_names = [o[0] for o in schema["outputs"]]
    variadic = op == "python_function"
    reads_files = any(a["name"] == "file_list" for a in schema["args"])
    takes_segments = any(a["name"] == "file_list_format" for a in schema["args"])

    def call(*inputs: DataNode, name: str = None, device: str = "cpu", **kwargs: Any):
        if not variadic and len(inputs) != n_inputs:
            raise TypeError(f"{op}() takes {n_inputs} input(s) ({', '.join(i[0] for i in schema['inputs']) or 'none'}), "
                            f"got {len(inputs)}")
        for i, x in enumerate(inputs):
            if not isinstance(x, DataNode):
                raise TypeError(f"{op}() input {i} must be the output of another fn.* call, got {type(x).__name__}")
        arg_inputs = {k: v for k, v in kwargs.items() if isinstance(v, DataNode)}
        for k in arg_inputs:
            if k not in per_sample:
                allowed = ", ".join(sorted(per_sample)) or "none"
                raise TypeError(f"{op}() argument '{k}' cannot be a per-sample input (those that can: {allowed})")
        constants = {k: v for k, v in kwargs.items() if not isinstance(v, DataNode)}
        samples = _samples(op, constants, takes_segments) if reads_files else None
        function = None
        outs = output_names
        if variadic:
            function = constants.pop("function", None)
            if not callable(function):
                raise TypeError(f"python_function() argument 'function' must be callable, got {type(function).__name__}")
            constants["function"] = function_name(function)
            n_out = constants.get("num_outputs", 1)
            outs = [f"output{k}" for k in range(n_out if isinstance(n_out, int) and n_out > 0 else 1)]
        args = _C.check_args(op, constants)
        required = [a["name"] for a in schema["args"] if a["required"]]
        for r in required:
            if r not in args and r not in arg_inputs:
                raise TypeError(f"{op}() missing required argument '{r}'")
        node = _Node(op, inputs, args, arg_inputs, name, _stage(device), outs, function)
        node.samples = samples
        return node.outputs[0] if len(node.outputs) == 1 else tuple(node.outputs)

    call.__name__ = call.__qualname__ = op
    call.__doc__ = schema["reference"]
    if reads_files:
        call.__doc__ += ("\n\nIn Python also ``files=`` (a sequence of paths, relative to file_root when given) "
                         "and ``labels=`` (one int per file; default: the file's index) instead of file_root's "
                         "folders or a file_list: the samples go to the pipeline in memory.")
    if takes_segments:
        call.__doc__ += (" With them ``segments=``: one (start, end) per file in seconds from the video's first "
                         "frame (end None: the video's end), the part of the video its clips are drawn from.")
    return call


for _name, _schema in sorted(schemas.items()):
    globals()[_name] = _make(_schema)
    __all__.append(_name)
del _name, _schema

from ._mediapipe_ops import ReadVideoDatasetFromDir, VideoDecoder  # noqa: E402 (MediaPipe names)
__all__ += ["ReadVideoDatasetFromDir", "VideoDecoder"]
