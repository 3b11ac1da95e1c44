"""timm's folder dataset and fast_collate, as the native path reads and batches them.

timm is not a dependency: nothing here imports it. Its classes and functions are found through
``sys.modules`` (a timm object exists only once timm is imported), as in _timm.py.

- ``ImageDataset`` over a ``ReaderImageFolder`` (what ``create_dataset('', root=DIR)`` returns
  for a folder) is the reader's ``samples`` list: ``[(path, target)]`` in timm's own order
  (natural sort of the paths), each opened with PIL and converted to ``input_img_mode``. The
  native path reads that list in the same index order with the same targets when the image
  reaches the transform as the pipeline decodes it: ``load_bytes=False``,
  ``input_img_mode='RGB'``, no ``target_transform``, and ``__getitem__`` (the dataset's and
  the reader's) exactly timm 1.0's, compared as bytecode, so another timm release or a
  subclass that changes them falls back with the reason. A ``None`` target is -1, as timm
  makes it. One difference, on bad files only: timm skips a file ``Image.open`` cannot open
  to the next index (up to 50 in a row) where the native path follows ``on_error``
  (``"raise"``: ``DataError``; ``"skip"``: the next readable sample, counted).
- ``fast_collate`` on ``(uint8 CHW image, int target)`` samples returns the tuple
  ``(uint8 NCHW tensor, int64 targets)``: default_collate's batch of the same samples, as a
  tuple. Its other inputs (tuples of views, float images it would truncate to uint8) are left
  to the caller to refuse (_collate.post_collate).
"""

from __future__ import annotations

import sys
from typing import Any, List, Optional, Sequence, Tuple

from PIL import Image

_DATASET, _READER, _LOADER = "timm.data.dataset", "timm.data.readers.reader_image_folder", "timm.data.loader"


def _timm(module: str, name: str) -> Any:
    return getattr(sys.modules.get(module), name, None)


# ---- timm 1.0's code, as the behaviour the native path reproduces --------------------------
# Copies of the two methods (timm/data/dataset.py and readers/reader_image_folder.py, timm
# 1.0, Apache-2.0), compared with the installed ones as bytecode, names and constants; never
# called. `Image` is imported as timm imports it: CPython compiles a call on a module-level
# imported name differently (LOAD_ATTR rather than LOAD_METHOD in 3.11).


def _dataset_getitem(self, index):
    img, target = self.reader[index]

    try:
        img = img.read() if self.load_bytes else Image.open(img)
    except Exception as e:
        _logger.warning(f'Skipped sample (index {index}, file {self.reader.filename(index)}). {str(e)}')
        self._consecutive_errors += 1
        if self._consecutive_errors < _ERROR_RETRY:
            return self.__getitem__((index + 1) % len(self.reader))
        else:
            raise e
    self._consecutive_errors = 0

    if self.input_img_mode and not self.load_bytes:
        img = img.convert(self.input_img_mode)
    if self.transform is not None:
        img = self.transform(img)

    if target is None:
        target = -1
    elif self.target_transform is not None:
        target = self.target_transform(target)

    return img, target


def _reader_getitem(self, index):
    path, target = self.samples[index]
    return open(path, 'rb'), target


def _same(f: Any, ref: Any) -> bool:
    a, b = getattr(f, "__code__", None), ref.__code__
    return (a is not None and a.co_code == b.co_code and a.co_names == b.co_names and a.co_consts == b.co_consts
            and a.co_argcount == b.co_argcount and not (a.co_flags ^ b.co_flags) & 0xFFFF)


def image_dataset_class() -> Optional[type]:
    """timm's ImageDataset, or None (timm not imported)."""
    cls = _timm(_DATASET, "ImageDataset")
    return cls if isinstance(cls, type) else None


def image_dataset_samples(ds: Any) -> Tuple[Sequence[Tuple[str, Any]], List[str]]:
    """(the samples the native path reads for timm ImageDataset `ds`, in dataset order; every
    reason it cannot read them as ``ds[i]`` does). ``__getitem__`` overrides are the caller's
    to judge (_image_datasets.py); this checks timm's own method and the reader."""
    cls = image_dataset_class()
    reasons: List[str] = []
    getitem = getattr(cls, "__getitem__", None)
    if not _same(getitem, _dataset_getitem) or getattr(getitem, "__globals__", {}).get("Image") is not Image:
        reasons.append("the installed timm's ImageDataset.__getitem__ is not timm 1.0's (the behaviour the native "
                       "path reproduces)")
    reader = getattr(ds, "reader", None)
    folder = _timm(_READER, "ReaderImageFolder")
    samples: Sequence[Tuple[str, Any]] = ()
    if not (isinstance(folder, type) and isinstance(reader, folder)):
        reasons.append(f"the ImageDataset's reader is a {type(reader).__name__}, not timm's ReaderImageFolder "
                       "(an image folder)")
    elif not _same(type(reader).__getitem__, _reader_getitem):
        reasons.append(f"the ImageDataset's reader {type(reader).__name__} does not read its samples as timm 1.0's "
                       "ReaderImageFolder does")
    else:
        samples = reader.samples
    if getattr(ds, "load_bytes", False):
        reasons.append("the ImageDataset has load_bytes=True (its transform gets the file's bytes, not an image)")
    mode = getattr(ds, "input_img_mode", None)
    if mode != "RGB":
        reasons.append(f"the ImageDataset's input_img_mode is {mode!r} (native: 'RGB', timm's default)")
    if getattr(ds, "target_transform", None) is not None:
        reasons.append("target_transform is set")
    return samples, reasons


def is_fast_collate(collate_fn: Any) -> bool:
    """Whether `collate_fn` is timm's fast_collate (timm.data.loader.fast_collate)."""
    f = _timm(_LOADER, "fast_collate")
    return f is not None and collate_fn is f
