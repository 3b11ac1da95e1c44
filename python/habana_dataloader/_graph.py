"""Graph building: the nodes fn.* calls create, and their conversion to a JSON spec.

A node is created by an ``fn.*`` call, already validated against its schema (so a wrong
argument raises at the line that wrote it). Nodes are free-standing: a pipeline's graph is
whatever its outputs reach. Node names default to ``<op>_<n>`` numbered in creation order
among the nodes a pipeline uses, so the same code gives the same names, hence the same random
streams, every run.
"""

from __future__ import annotations

import importlib
import itertools
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

_ids = itertools.count()
_local = threading.local()


class DataNode:
    """One output of a graph node: pass it to other ``fn.*`` calls as an input or a per-sample
    argument, or to ``Pipeline.define`` / ``set_outputs`` as a pipeline output."""

    __slots__ = ("node", "index")

    def __init__(self, node: "_Node", index: int):
        self.node = node
        self.index = index

    @property
    def name(self) -> str:
        return f"{self.node.op}.{self.node.output_names[self.index]}"

    def __repr__(self) -> str:
        return f"DataNode({self.node.op!r} #{self.node.uid}, output {self.index})"


class _Node:
    """A graph node: operator, constant arguments, inputs and per-sample argument inputs."""

    def __init__(self, op: str, inputs: Sequence[DataNode], args: Dict[str, Any],
                 arg_inputs: Dict[str, DataNode], name: Optional[str], stage: str,
                 output_names: Sequence[str], function: Optional[Callable] = None):
        self.uid = next(_ids)
        self.op = op
        self.inputs = list(inputs)
        self.args = dict(args)
        self.arg_inputs = dict(arg_inputs)
        self.name = name
        self.stage = stage
        self.output_names = list(output_names)
        self.function = function  # python_function only
        self.samples = None  # a reader's _C.Samples given in memory (files=, labels=)
        self.outputs = [DataNode(self, i) for i in range(len(output_names))]

    def upstream(self) -> List["_Node"]:
        return [d.node for d in self.inputs] + [d.node for d in self.arg_inputs.values()]


def current_pipeline():
    """The pipeline of the innermost ``with pipe:`` block on this thread, or None."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def push_pipeline(pipe) -> None:
    if not hasattr(_local, "stack"):
        _local.stack = []
    _local.stack.append(pipe)


def pop_pipeline() -> None:
    _local.stack.pop()


def function_name(f: Callable) -> str:
    """The import path ``module:qualname`` a python_function is saved under."""
    module = getattr(f, "__module__", None) or "__main__"
    qual = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    return f"{module}:{qual}"


def resolve_function(name: str) -> Callable:
    """Imports ``module:qualname`` (how a saved python_function finds its callable again)."""
    module, _, qual = name.partition(":")
    if not qual or "<" in qual:
        raise ValueError(f"python_function {name!r} cannot be imported (a lambda or a local "
                         f"function): pass functions={{{name!r}: f}} to Pipeline.from_json")
    obj: Any = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def collect(outputs: Sequence[DataNode]) -> List[_Node]:
    """The nodes the outputs reach, in creation order."""
    seen: Dict[int, _Node] = {}
    stack = [d.node for d in outputs]
    while stack:
        n = stack.pop()
        if n.uid in seen:
            continue
        seen[n.uid] = n
        stack.extend(n.upstream())
    return [seen[k] for k in sorted(seen)]


def to_spec(outputs: Sequence[DataNode]) -> Tuple[dict, Dict[str, Callable], Dict[str, Any]]:
    """The JSON-ready spec dict for a graph, the python functions it calls by name, and the
    readers' samples given in memory (node name -> _C.Samples), which no JSON holds."""
    for o in outputs:
        if not isinstance(o, DataNode):
            raise TypeError(f"pipeline outputs must be fn.* outputs (DataNode), got {type(o).__name__}")
    nodes = collect(outputs)
    names: Dict[int, str] = {}
    taken = {n.name for n in nodes if n.name}
    counters: Dict[str, int] = {}
    for n in nodes:
        if n.name:
            names[n.uid] = n.name
            continue
        while True:
            k = counters.get(n.op, 0)
            counters[n.op] = k + 1
            candidate = f"{n.op}_{k}"
            if candidate not in taken:
                break
        taken.add(candidate)
        names[n.uid] = candidate
    if len(set(names.values())) != len(names):
        raise ValueError("two nodes have the same name=")
    functions: Dict[str, Callable] = {}

    def ref(d: DataNode) -> dict:
        return {"node": names[d.node.uid], "output": d.index}

    spec_nodes = []
    samples = {names[n.uid]: n.samples for n in nodes if n.samples is not None}
    for n in nodes:
        args = dict(n.args)
        if n.function is not None:
            key, k = args["function"], 1
            while functions.get(key, n.function) is not n.function:  # two lambdas in one scope
                k += 1
                key = f"{args['function']}#{k}"
            functions[key] = n.function
            args["function"] = key
        spec_nodes.append({"name": names[n.uid], "op": n.op, "stage": n.stage,
                           "inputs": [ref(d) for d in n.inputs], "args": args,
                           "arg_inputs": {k: ref(d) for k, d in n.arg_inputs.items()}})
    spec = {"format": "hdl-pipeline-spec", "version": 1, "nodes": spec_nodes,
            "outputs": [ref(d) for d in outputs]}
    return spec, functions, samples
