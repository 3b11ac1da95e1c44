"""The generated ``fn.*`` functions: one per operator schema (``_C.schemas()``), made at import.

``fn`` re-exports them with MediaPipe's video names (``_mediapipe_ops``), which are written on
top of them: this module imports neither, so neither import waits on the other.

``stage=`` picks where a node runs ("cpu", "mixed", "gpu"; C++ ``hdl::Stage``, the JSON spec's
``"stage"``). ``device=`` is DALI's and MediaPipe's spelling of the same thing, accepted here
and converted to a stage once, at the call (also "cuda", "hpu" or "device" for "gpu"); it is
not the accelerator that ``Pipeline(device=)`` and ``HabanaDataLoader(device=)`` name.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from . import _C
from ._graph import DataNode, _Node, function_name

__all__: List[str] = []

# A stage's name, or DALI's / MediaPipe's word for one, -> the stage.
_STAGES = {"cpu": "cpu", "mixed": "mixed", "gpu": "gpu", "cuda": "gpu", "hpu": "gpu", "device": "gpu"}

#: name -> schema dict (from the C++ registry, plus python_function)
schemas: Dict[str, dict] = {s["name"]: s for s in _C.schemas()}


def _stage(op: str, stage: Any, device: Any) -> str:
    """The stage of an ``op(...)`` call: ``stage=``, or ``device=`` (DALI's spelling), checked
    and converted here, once."""
    if stage is not None and device is not None:
        raise TypeError(f"{op}() takes stage= or device= (DALI's spelling of stage=), not both")
    name, value = ("device", device) if device is not None else ("stage", "cpu" if stage is None else stage)
    key = str(value).split(":")[0].lower()
    if key not in _STAGES:
        raise ValueError(f"{op}() argument '{name}' must be one of cpu, mixed, gpu, got {value!r}")
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

    def call(*inputs: DataNode, name: str = None, stage: Optional[str] = None, device: Optional[str] = None,
             **kwargs: Any):
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
        node = _Node(op, inputs, args, arg_inputs, name, _stage(op, stage, device), outs, function)
        node.samples = samples
        return node.outputs[0] if len(node.outputs) == 1 else tuple(node.outputs)

    call.__name__ = call.__qualname__ = op
    call.__module__ = "habana_dataloader.fn"  # where users find it
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
