"""VideoList.from_shards' entries: the videos of WebDataset tar shards as "<shard>.tar/<member>"
paths, one per sample, with their labels.

Each shard's samples come from its index (``_C.shard_samples``: the ``.idx`` sidecar, else built
from the headers and saved), which also gives the label fields' bytes; no video is read here.
The pipeline's default file system and ``_C.decode_clip`` open such a path as a window onto the
member inside the shard (pipeline/readers/tar/shard_member_file.h), so the VideoList built from
these entries reads, natively and through torch's DataLoader, as one over the files on disk.
"""

from __future__ import annotations

import warnings
from typing import Any, List, Optional, Tuple

from . import _C
from ._wds_source import data_error, expand_urls, is_remote, local_path
from ._video_common import VIDEO_EXTENSIONS

_VIDEO_FIELDS = frozenset(e.lstrip(".").lower() for e in VIDEO_EXTENSIONS)


def _video_field(members: Any, wanted: Optional[List[str]], where: str, name: str) -> Optional[str]:
    """The sample's video field: the first of `wanted` it has, or (None) its one video field."""
    if wanted is not None:
        return next((f for f in wanted if f in members), None)
    found = sorted(f for f in members if f in _VIDEO_FIELDS)
    if len(found) > 1:
        raise data_error(f"{name}: {where}: several video fields ({', '.join(found)}); pick one with field=")
    return found[0] if found else None


def shard_entries(urls: Any, field: Optional[str], label: Optional[str],
                  name: str) -> Tuple[List[str], List[int], List[str]]:
    """(paths, labels, sources) of every sample of the shards `urls` (webdataset's specs), in
    shard order then member order; `sources` name each sample's shard and key for messages.
    `name` ("VideoList.from_shards()") starts every message."""
    wanted = [f.strip().lower() for f in field.split(";") if f.strip()] if field is not None else None
    label = label.lower() if label else None
    paths: List[str] = []
    labels: List[int] = []
    sources: List[str] = []
    for url in expand_urls(urls):
        if is_remote(url):
            raise ValueError(f"{name}: shard {url!r}: only local shards for now (videos are read with seeks)")
        shard = local_path(url)
        if not shard.endswith(".tar"):
            raise ValueError(f"{name}: shard {shard!r}: a plain .tar shard is needed (videos are read with seeks; "
                             "a compressed shard can only be streamed)")
        samples, warning = _C.shard_samples(shard, [label] if label else [])
        if warning:
            warnings.warn(f"{name}: {warning}", RuntimeWarning, stacklevel=4)
        for key, members, values in samples:
            where = f'tar shard "{shard}": key "{key}"'
            video = _video_field(members, wanted, where, name)
            if video is None:
                raise data_error(f"{name}: {where}: no {field or 'video'} field (the sample has "
                                 f"{', '.join(sorted(members)) or 'no fields'})")
            value = 0
            if label:
                if label not in values:
                    raise data_error(f"{name}: {where}: no {label!r} field (the label)")
                try:
                    value = int(values[label].decode("utf-8").strip())
                except (UnicodeDecodeError, ValueError):
                    raise data_error(f"{name}: {where}: field {label!r} is not an integer: "
                                     f"{values[label][:40]!r}") from None
            paths.append(f"{shard}/{members[video]}")
            labels.append(value)
            sources.append(where)
    if not paths:
        raise data_error(f"{name}: no samples in {urls!r}")
    return paths, labels, sources
