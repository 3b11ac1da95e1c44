"""write_shards: an ImageFolder, a file list or a video list -> WebDataset tar shards.

    habana_dataloader.write_shards("imagenet/train", "shards/train-%06d.tar", maxcount=10000)
    python3 -m habana_dataloader.shards imagenet/train shards/train-%06d.tar --maxcount 10000
    hdl-shards files.txt shards/val-%06d.tar --root /data/imagenet

Each file becomes one sample: key = its path relative to the source root without the
extension (dots in the file name become "_", so the key ends at the first dot as WebDataset
reads it; a clash gets "_<ext>" then "_2", "_3", ...), fields = the file's bytes unchanged under
its lower-cased extension and ``cls`` = the label as decimal text. Members are written in
sorted field order (as webdataset's TarWriter), in POSIX tar (plain ustar headers; a pax
header only for a name over 100 bytes or not ASCII), with fixed mtime, mode, uid, gid and
names, so the same input gives byte-identical shards. Shards are written under a temporary
name and renamed when complete.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import sys
import tarfile
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

__all__ = ["write_shards", "SHARD_MTIME", "main"]

#: mtime of every member (2000-01-01 00:00:00 UTC): fixed for byte-identical reruns, and not 0,
#: which GNU tar warns about as implausibly old.
SHARD_MTIME = 946684800
_PathLike = Union[str, os.PathLike]


def _image_and_video_extensions() -> Tuple[str, ...]:
    from torchvision.datasets.folder import IMG_EXTENSIONS
    from ._video_common import VIDEO_EXTENSIONS
    return tuple(sorted({e.lower() for e in (*IMG_EXTENSIONS, *VIDEO_EXTENSIONS)}))


def _folder_entries(root: str, extensions: Optional[Sequence[str]]) -> List[Tuple[str, str, int]]:
    """(path, relative path, label) of a class-folder tree, labels as torchvision's find_classes."""
    from torchvision.datasets.folder import find_classes, make_dataset
    exts = tuple(e.lower() for e in (extensions or _image_and_video_extensions()))
    _, class_to_idx = find_classes(root)
    return [(p, os.path.relpath(p, root), label) for p, label in make_dataset(root, class_to_idx, exts)]


def _list_entries(list_file: str, root: Optional[_PathLike]) -> List[Tuple[str, str, int]]:
    """A "path label" file list, parsed by the loader's own parser (errors name the line)."""
    from . import _C
    s = _C.Samples.from_file_list(list_file, os.fspath(root) if root is not None else "", "path label")
    return [(s.path(i), s.relative_path(i), s.label(i)) for i in range(len(s))]


def _pairs_entries(pairs: Iterable[Tuple[_PathLike, int]], root: Optional[_PathLike]) -> List[Tuple[str, str, int]]:
    out = []
    for path, label in pairs:
        path = os.fspath(path)
        full = os.path.join(os.fspath(root), path) if root is not None else path
        out.append((full, os.path.relpath(full, root) if root is not None else path, int(label)))
    return out


def _stem_key(rel: str) -> Tuple[str, str]:
    """(key, field) of a relative path: the extension lower-cased; no dot left in the file name."""
    rel = rel.replace(os.sep, "/")
    parts = [p for p in rel.split("/") if p not in ("", ".", "..")]
    name = parts.pop() if parts else rel
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, "bin"
    stem = stem.replace(".", "_")
    parts = [p.replace(".", "_") if p.startswith("__") else p for p in parts]  # no __meta__ paths
    key = "/".join([*parts, stem])
    if key.startswith("__"):
        key = "_" + key.lstrip("_")
    return key, ext.lower()


def _keyed(entries: List[Tuple[str, str, int]]) -> List[Tuple[str, str, str, int]]:
    """(key, field, path, label), keys unique and independent of any shuffle."""
    out, used = [], set()
    for path, rel, label in sorted(entries, key=lambda e: (e[1], e[0])):
        key, field = _stem_key(rel)
        if key in used:
            base, n, key = key, 2, f"{key}_{field}"
            while key in used:
                key, n = f"{base}_{n}", n + 1
        used.add(key)
        out.append((key, field, path, label))
    return out


def _member(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), SHARD_MTIME, 0o644
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    tf.addfile(ti, io.BytesIO(data))


def _sample_size(key: str, field: str, n: int) -> int:
    def member(name_len: int, size: int) -> int:
        return 512 + (2 * 512 if name_len > 100 else 0) + (size + 511) // 512 * 512
    return member(len(key) + 4, 8) + member(len(key) + 1 + len(field), n)


class _ShardOut:
    def __init__(self, pattern: str, start: int):
        self.pattern, self.index, self.paths = pattern, start, []
        self.tf: Optional[tarfile.TarFile] = None
        self.count = self.size = 0

    def open(self) -> None:
        path = self.pattern % self.index
        self.index += 1
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self.tmp = path + ".tmp"
        self.tf = tarfile.open(self.tmp, "w", format=tarfile.PAX_FORMAT, encoding="utf-8")
        self.paths.append(path)
        self.count = self.size = 0

    def close(self) -> None:
        if self.tf is not None:
            self.tf.close()
            os.replace(self.tmp, self.paths[-1])
            self.tf = None


def write_shards(source: Union[_PathLike, Iterable[Tuple[_PathLike, int]]], pattern: _PathLike, *,
                 maxcount: int = 100000, maxsize: float = 3e9, shuffle: bool = False, seed: int = 0,
                 root: Optional[_PathLike] = None, extensions: Optional[Sequence[str]] = None, start_shard: int = 0,
                 index: bool = False, verbose: bool = False) -> List[str]:
    """Writes ``source`` as WebDataset tar shards named ``pattern % n`` (n from ``start_shard``);
    returns their paths.

    ``source``: an ImageFolder root (class folders; labels by sorted class name, as torchvision;
    ``extensions`` filters, default: image and video extensions), a "path label" file list (of
    images or videos; paths relative to ``root``, default the list's folder), or an iterable of
    (path, label) pairs (relative to ``root`` when given). Samples are in sorted relative-path
    order, or shuffled with ``random.Random(seed)`` when ``shuffle``. A shard holds at most
    ``maxcount`` samples and, unless one sample alone is larger, ``maxsize`` bytes.

    ``index``: shard index files are the native reader's (built and cached on first open);
    ``index=True`` builds them now, and is an error when this build's extension has no native
    tar reader yet.
    """
    pattern = os.fspath(pattern)
    if "%" not in pattern:
        raise ValueError(f"write_shards(): pattern {pattern!r} needs a %d-style field for the shard number, "
                         "e.g. 'out/train-%06d.tar'")
    if maxcount < 1 or maxsize <= 0:
        raise ValueError(f"write_shards(): maxcount ({maxcount}) and maxsize ({maxsize}) must be positive")
    build_index = _index_builder() if index else None
    if isinstance(source, (str, os.PathLike)):
        src = os.fspath(source)
        if os.path.isdir(src):
            entries = _folder_entries(src, extensions)
        elif os.path.isfile(src):
            entries = _list_entries(src, root)
        else:
            raise FileNotFoundError(f"write_shards(): source {src!r} is neither a folder nor a file list")
    else:
        entries = _pairs_entries(source, root)
    if not entries:
        raise ValueError(f"write_shards(): no files in {source!r}")
    samples = _keyed(entries)
    if shuffle:
        random.Random(seed).shuffle(samples)
    out = _ShardOut(pattern, start_shard)
    try:
        for key, field, path, label in samples:
            with open(path, "rb") as f:
                data = f.read()
            size = _sample_size(key, field, len(data))
            if out.tf is None or out.count >= maxcount or (out.count > 0 and out.size + size > maxsize):
                out.close()
                out.open()
                if verbose:
                    print(f"# writing {out.paths[-1]}", file=sys.stderr)
            for name, value in sorted({"cls": str(label).encode(), field: data}.items()):
                _member(out.tf, f"{key}.{name}", value)
            out.count, out.size = out.count + 1, out.size + size
        out.close()
    finally:
        if out.tf is not None:
            out.tf.close()
            os.unlink(out.tmp)
    if build_index is not None:
        for p in out.paths:
            build_index(p)
    return out.paths


def _index_builder() -> Any:
    from . import _C
    f = getattr(_C, "build_shard_index", None)
    if f is None:
        raise RuntimeError("write_shards(index=True): this build of habana_dataloader has no native tar reader "
                           "(_C.build_shard_index); leave index=False: the native reader builds each shard's "
                           "index on first open and caches it")
    return f


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="hdl-shards", description="Write an ImageFolder, a 'path label' file "
                                "list or a video list as WebDataset tar shards.")
    p.add_argument("source", help="an ImageFolder root (class folders) or a 'path label' file list")
    p.add_argument("pattern", help="output shard names, with a %%d field, e.g. out/train-%%06d.tar")
    p.add_argument("--maxcount", type=int, default=100000, help="samples per shard at most (100000)")
    p.add_argument("--maxsize", type=float, default=3e9, help="bytes per shard at most (3e9)")
    p.add_argument("--shuffle", action="store_true", help="shuffle the samples across shards")
    p.add_argument("--seed", type=int, default=0, help="the shuffle's seed (0)")
    p.add_argument("--root", help="what a file list's paths are relative to (default: its folder)")
    p.add_argument("--extensions", help="comma-separated file endings an ImageFolder keeps (default: "
                   "image and video extensions)")
    p.add_argument("--start-shard", type=int, default=0, help="the first shard's number (0)")
    p.add_argument("--index", action="store_true", help="build the native reader's index files now")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    a = p.parse_args(argv)
    exts = [e if e.startswith(".") else "." + e for e in a.extensions.split(",")] if a.extensions else None
    try:
        paths = write_shards(a.source, a.pattern, maxcount=a.maxcount, maxsize=a.maxsize, shuffle=a.shuffle,
                             seed=a.seed, root=a.root, extensions=exts, start_shard=a.start_shard, index=a.index,
                             verbose=not a.quiet)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"hdl-shards: {e}", file=sys.stderr)
        return 1
    if not a.quiet:
        print("\n".join(paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
