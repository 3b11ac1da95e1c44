#!/usr/bin/env python3
"""The house guards itself: every #include "..." between the project's folders points down a
layer, and no files include each other in a circle.

    check_layers.py ROOT            checks the tree at ROOT (exit 1, listing every violation)
    check_layers.py --self-test     checks that a backward include and a circle are caught

Layers, bottom to top: media/ <- decoders/ <- pipeline/ <- python/ (python/src, the
bindings). A file may include its own layer and the ones below. Inside pipeline/, the rooms
the readers' README describes:
  - the core (pipeline/*.h|cc, pipeline/detail/) includes none of readers/, operators/,
    decode/;
  - operators/ includes no readers/ (nor the reverse): they meet through the source-operator
    contract (pipeline/operator.h) and pipeline/decode/;
  - decode/ includes neither readers/ nor operators/;
  - readers/tar/ (the format layer) includes nothing of pipeline/ but itself and
    pipeline/registry.h.
kernels/ and tools/ are free within pipeline/ (tools are programs on top). tests/, samples/
and the fuzz targets may include anything. An include of a file that does not exist in the
tree (a third-party or system header given with quotes) is ignored.

The Python package (python/habana_dataloader) has no import circle either, counting imports
inside functions too ("from ._x import y", "from . import x").
"""
import os
import re
import sys
import tempfile

LAYERS = ["media", "decoders", "pipeline", "python"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".h", ".cc", ".cu", ".cuh")


def layer_of(path):
    top = path.split("/", 1)[0]
    return LAYERS.index(top) if top in LAYERS else None


def room_of(path):
    """The pipeline room of a file ('core', 'readers', 'tar', 'operators', 'decode', other)."""
    parts = path.split("/")
    if parts[0] != "pipeline":
        return None
    if len(parts) == 2 or parts[1] == "detail":
        return "core"
    if parts[1] == "readers":
        return "tar" if len(parts) > 3 and parts[2] == "tar" else "readers"
    return parts[1]


def room_violation(src, dst):
    a, b = room_of(src), room_of(dst)
    if a is None or b is None or a == b:
        return None
    if a == "core" and b in ("readers", "tar", "operators", "decode"):
        return "the core includes " + b + "/"
    if (a, b) in (("operators", "readers"), ("operators", "tar"), ("readers", "operators"), ("tar", "operators")):
        return a + "/ includes " + b + "/ (they meet through pipeline/operator.h and pipeline/decode/)"
    if a == "decode" and b in ("readers", "tar", "operators"):
        return "decode/ includes " + b + "/"
    if a == "tar" and dst != "pipeline/registry.h":
        return "readers/tar/ (the format layer) includes " + dst
    return None


def scan(root):
    """{file: [included files of the tree]} for the layered folders."""
    graph = {}
    for top in LAYERS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    text = f.read()
                graph[path] = [inc for inc in INCLUDE.findall(text) if os.path.isfile(os.path.join(root, inc))]
    return graph


def cycles(graph):
    """Each include circle once, as a list of files."""
    found, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    sys.setrecursionlimit(10000)
    for n in sorted(graph):
        if n not in state:
            visit(n)
    return found


PY_IMPORT = re.compile(r"^\s*from \.(\w*) import ([^\n]+)", re.M)


def scan_python(root, package="python/habana_dataloader"):
    """{module: [modules of the package it imports]} (relative imports, at any level)."""
    graph = {}
    d = os.path.join(root, package)
    if not os.path.isdir(d):
        return graph
    for name in sorted(os.listdir(d)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(d, name), encoding="utf-8") as f:
            text = f.read()
        deps = set()
        for module, names in PY_IMPORT.findall(text):
            if module:
                deps.add(module)
            else:  # "from . import fn, _C"
                deps.update(n for n in re.split(r"[,\s()]+", names) if os.path.isfile(os.path.join(d, n + ".py")))
        graph[package + "/" + name[:-3]] = sorted(package + "/" + m for m in deps)
    return graph


def check(root):
    graph = scan(root)
    problems = []
    for src, incs in sorted(graph.items()):
        for dst in incs:
            ls, ld = layer_of(src), layer_of(dst)
            if ls is not None and ld is not None and ld > ls:
                problems.append(f"{src} includes {dst}: {LAYERS[ls]}/ is below {LAYERS[ld]}/")
            why = room_violation(src, dst)
            if why:
                problems.append(f"{src} includes {dst}: {why}")
    for c in cycles(graph):
        problems.append("an include circle: " + " -> ".join(c))
    for c in cycles(scan_python(root)):
        problems.append("a Python import circle: " + " -> ".join(c))
    return graph, problems


def self_test():
    with tempfile.TemporaryDirectory() as d:
        def put(path, text):
            os.makedirs(os.path.dirname(os.path.join(d, path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as f:
                f.write(text)
        put("media/a.h", '#include "media/b.h"\n')
        put("media/b.h", "")
        put("decoders/c.h", '#include "media/a.h"\n')
        put("pipeline/operator.h", '#include "decoders/c.h"\n')
        _, ok = check(d)
        assert ok == [], ok
        put("media/b.h", '#include "decoders/c.h"\n')  # backward, and a circle through it
        _, bad = check(d)
        assert any("media/ is below decoders/" in p for p in bad), bad
        assert any("an include circle" in p for p in bad), bad
        put("media/b.h", "")
        put("pipeline/readers/r.h", '#include "pipeline/operators/o.h"\n')
        put("pipeline/operators/o.h", "")
        _, bad = check(d)
        assert any("readers/ includes operators/" in p for p in bad), bad
        put("pipeline/readers/r.h", "")
        put("python/habana_dataloader/video.py", "def f():\n    from ._shards import x\n")
        put("python/habana_dataloader/_shards.py", "from .video import EXTENSIONS\n")
        _, bad = check(d)
        assert any("a Python import circle" in p for p in bad), bad
    print("check_layers.py: the self-test caught a backward include, a circle, a room crossing and a Python import circle")


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    graph, problems = check(root)
    for p in problems:
        print(p)
    edges = sum(len(v) for v in graph.values())
    print(f"check_layers.py: {len(graph)} files, {edges} includes, {len(problems)} problems", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
