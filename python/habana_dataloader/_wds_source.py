"""The source half of WebDataset: shard URL specs -> shard list, tar shards -> grouped samples.

Private to ``wds.py``; the rules are webdataset 1.0.2's (``shardlists``, ``tariterators``),
re-implemented on the standard library (``tarfile`` in streaming mode "r|*", so .tar.gz and
other compressed tars work too), and stricter in one place: a shard must end with tar's
end-of-archive blocks, so a shard cut at a header boundary is an error, not a short shard.
"""

from __future__ import annotations

import os
import re
import string
import tarfile
from itertools import product
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlparse

from . import _C

_INT_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:\.\.-?(\d+))?$")
_CHAR_RANGE = re.compile(r"^([A-Za-z])\.\.([A-Za-z])(?:\.\.-?(\d+))?$")
_LETTERS = string.ascii_uppercase + string.ascii_lowercase
_KEY_EXT = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")  # webdataset's base_plus_ext
_SKIP_META = re.compile(r"__[^/]*__($|/)")


def data_error(message: str, code: str = "invalid data") -> Exception:
    e = _C.DataError(message)
    e.code = code
    return e


# --- URL specs ------------------------------------------------------------------------------

def _range(expr: str) -> Optional[List[str]]:
    """`a..b[..step]` (integers, zero-padded when either end is, or letters), as bash/braceexpand."""
    m = _INT_RANGE.match(expr)
    if m:
        lo, hi, step = m.groups()
        width = max(len(lo), len(hi)) if any(s.startswith(("0", "-0")) for s in (lo, hi) if s not in ("0", "-0")) else 0
        step_n = (int(step) or 1) if step else 1
        a, b = int(lo), int(hi)
        r = range(a, b + 1, step_n) if a < b else range(a, b - 1, -step_n)
        return ["%0*d" % (width, i) for i in r]
    m = _CHAR_RANGE.match(expr)
    if m:
        lo, hi, step = m.groups()
        step_n = (int(step) or 1) if step else 1
        a, b = _LETTERS.index(lo), _LETTERS.index(hi)
        return list(_LETTERS[a:b + 1:step_n] if a < b else _LETTERS[a:(b or -len(_LETTERS)) - 1:-step_n])
    return None


def _split_top(s: str, sep: str) -> List[str]:
    """s split at `sep` characters outside braces (backslash escapes respected)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        depth += c == "{"
        depth -= c == "}"
        if c == sep and depth == 0:
            parts.append(s[start:i])
            start = i + 1
        i += 1
    parts.append(s[start:])
    return parts


def _alternatives(expr: str) -> List[str]:
    """The strings a brace group's inside expands to (with the braces kept when it is not a group)."""
    r = _range(expr)
    if r is not None:
        return r
    items = _split_top(expr, ",")
    if len(items) < 2:  # `{x}`: not a group, literal braces around an expanded x
        return ["{" + s + "}" for s in _expand(expr)]
    return [s for item in items for s in _expand(item)]


def _expand(pattern: str) -> List[str]:
    pieces: List[List[str]] = []
    depth, start, i = 0, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            if depth == 0 and i > start:
                pieces.append([pattern[start:i]])
                start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                pieces.append(_alternatives(pattern[start + 1:i]))
                start = i + 1
        i += 1
    if depth != 0:
        raise ValueError(f"WebDataset: unbalanced braces in shard spec {pattern!r}")
    if start < len(pattern):
        pieces.append([pattern[start:]])
    return ["".join(p) for p in product(*pieces)]


def brace_expand(pattern: str) -> List[str]:
    """bash-style brace expansion, as the braceexpand package does it: ``{a,b}``, ``{000..009}``
    (zero padding kept), ``{a..e}``, ``{0..10..2}``, nesting, backslash escapes."""
    return [re.sub(r"\\(.)", r"\1", s) for s in _expand(pattern)]


def _env(s: str) -> str:
    def lookup(m: "re.Match[str]") -> str:
        key = "WDS_" + m.group(1)
        if key not in os.environ:
            raise ValueError(f"WebDataset: shard spec {s!r} names ${{{m.group(1)}}} but {key} is not set")
        return os.environ[key]
    for _ in range(10):
        s, last = re.sub(r"\$\{(\w+)\}", lookup, s), s
        if s == last:
            break
    return s


def expand_urls(urls: Any) -> List[str]:
    """A shard spec -> shard URLs: "::"-joined specs, ${X} from $WDS_X, brace expansion; a list
    (or other iterable) of specs is each expanded the same way."""
    if isinstance(urls, (str, os.PathLike)):
        specs = os.fspath(urls).split("::")
    elif isinstance(urls, dict):
        raise ValueError("WebDataset: dataset specs (dicts, .yaml files) are not supported; give shard URLs")
    else:
        specs = [os.fspath(u) for u in urls]
    out = [u for spec in specs for u in brace_expand(_env(spec))]
    if not out:
        raise ValueError(f"WebDataset: no shards in {urls!r}")
    for u in out:
        if not is_remote(u):
            local_path(u)  # unsupported schemes fail now, not in a worker
    return out


def is_remote(url: str) -> bool:
    """http(s):// and s3:// shards: read by HabanaDataLoader's native reader (the C++ remote file
    systems, with the local cache of WebDataset(cache_dir=...)), not by the Python iteration."""
    return url.lower().startswith(("http://", "https://", "s3://"))


def local_path(url: str) -> str:
    """The file a shard URL names (a path or a file:// URL); ValueError for anything else."""
    if url.endswith((".yaml", ".yml", ".json")) or url.endswith("/"):
        raise ValueError(f"WebDataset: {url!r}: shard list files and directories are not supported; "
                         "give shard URLs (brace expansion is supported)")
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return parsed.path
    if parsed.scheme == "" or len(parsed.scheme) == 1:  # a path (C:\ on Windows)
        return url
    if is_remote(url):
        raise ValueError(f"WebDataset: shard {url!r}: remote shards are read by HabanaDataLoader (natively) only; "
                         "iterated in Python (torch's DataLoader), a WebDataset reads local paths and file:// URLs")
    raise ValueError(f"WebDataset: shard {url!r}: only local paths and file:// URLs are read for now "
                     "(use webdataset.WebDataset for pipe:, http:, s3:, ...)")


# --- worker and rank splits -----------------------------------------------------------------

def worker_info() -> Tuple[int, int, int, int]:
    """(rank, world_size, worker, num_workers) as webdataset's pytorch_worker_info finds them:
    RANK/WORLD_SIZE, else torch.distributed; WORKER/NUM_WORKERS, else torch's worker info."""
    import torch.distributed
    import torch.utils.data
    rank, world, worker, workers = 0, 1, 0, 1
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    elif torch.distributed.is_available() and torch.distributed.is_initialized():
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    if "WORKER" in os.environ and "NUM_WORKERS" in os.environ:
        worker, workers = int(os.environ["WORKER"]), int(os.environ["NUM_WORKERS"])
    else:
        info = torch.utils.data.get_worker_info()
        if info is not None:
            worker, workers = info.id, info.num_workers
    return rank, world, worker, workers


# --- tar shards -> samples ------------------------------------------------------------------

class _TarInfo(tarfile.TarInfo):
    """Records why tarfile stopped reading headers: tarfile ends an archive silently at a
    missing, short or corrupt header; only a zero block (EOFHeaderError) is a proper end."""

    @classmethod
    def fromtarfile(cls, tf):
        try:
            return super().fromtarfile(tf)
        except tarfile.HeaderError as e:
            tf._hdl_stop = (e, tf.offset)
            raise


def _tar_members(url: str, fileobj: Any) -> Iterator[Tuple[str, bytes, int]]:
    """(name, data, header offset) of each regular member; DataError names the shard and where."""
    last = None
    try:
        tf = tarfile.open(fileobj=fileobj, mode="r|*", tarinfo=_TarInfo)
        for ti in tf:
            last = ti
            if not ti.isreg():
                continue
            data = tf.extractfile(ti).read()
            yield ti.name, data, ti.offset
            tf.members = []  # streaming: keep no index
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        where = (f" in member {last.name!r} (header at byte {last.offset}, data at byte {last.offset_data})"
                 if last is not None else " at byte 0")
        raise data_error(f"WebDataset: shard {url!r}: not a readable tar{where}: {e}") from e
    stop, at = getattr(tf, "_hdl_stop", (None, None))
    if not isinstance(stop, tarfile.EOFHeaderError):
        after = f" after member {last.name!r}" if last is not None else ""
        what = "ends without tar's end-of-archive blocks (truncated?)" if isinstance(
            stop, (tarfile.EmptyHeaderError, tarfile.TruncatedHeaderError)) else f"has a bad header ({stop})"
        raise data_error(f"WebDataset: shard {url!r}: {what} at byte {at}{after}")


def shard_samples(url: str, handler: Callable[[Exception], bool],
                  select_files: Optional[Callable[[str], bool]] = None,
                  rename_files: Optional[Callable[[str], str]] = None) -> Iterator[Dict[str, Any]]:
    """The samples of one shard: consecutive members sharing a key (the path up to the first dot
    of the file name), fields named by the rest lower-cased, plus __key__, __url__, __local_path__."""
    path = local_path(url)
    current: Optional[Dict[str, Any]] = None
    try:
        with open(path, "rb") as f:
            for name, data, offset in _tar_members(url, f):
                if "/" not in name and name.startswith("__") and name.endswith("__"):
                    continue
                if _SKIP_META.match(name):
                    continue
                if rename_files:
                    name = rename_files(name)
                if select_files is not None and not select_files(name):
                    continue
                m = _KEY_EXT.match(name)
                if not m:
                    continue
                key, field = m.group(1), m.group(2).lower()
                if current is None or key != current["__key__"]:
                    if current is not None:
                        yield current
                    current = {"__key__": key, "__url__": url, "__local_path__": path}
                if field in current:
                    raise data_error(f"WebDataset: shard {url!r}: sample {key!r} has field {field!r} twice "
                                     f"(member {name!r} at byte {offset})")
                current[field] = data
    except Exception as e:
        if isinstance(e, OSError) and not isinstance(e, _C.DataError):
            e = data_error(f"WebDataset: shard {url!r}: {e}", "io error")
        if handler(e):
            return
        raise StopShards() from e
    if current is not None:
        yield current


class StopShards(Exception):
    """A handler said stop (returned False): the epoch ends here, as in webdataset."""
