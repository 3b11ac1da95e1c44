"""WebDataset's sample decoding (``WebDataset.decode``), without the webdataset package.

Same rules as webdataset 1.0.2's ``autodecode``: a field's data goes through the pre handlers
(gzip: ``x.jpg.gz`` -> ``x.jpg``), then the handlers given to ``decode`` (image specs such as
"pil" / "rgb8" / "torchrgb", or callables ``f(key, data)`` returning None to pass), then the
post handlers (the extension table: cls/txt/json/pyd/npy/...); the first non-None result wins,
else the bytes stay as they are. Fields whose name starts with "__" are metadata (bytes are
made str). Images are decoded with Pillow exactly as webdataset does, so tensors compare equal.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np

from . import _C

__all__ = ["Decoder", "ImageHandler", "IMAGE_EXTENSIONS", "IMAGE_SPECS", "basichandlers"]

#: Pillow's image extensions, as webdataset lists them (ImageHandler decodes only these).
IMAGE_EXTENSIONS = frozenset(
    "blp bmp dib bufr cur pcx dcx dds ps eps fit fits fli flc ftc ftu gbr gif grib h5 hdf png apng jp2 j2k jpc "
    "jpf jpx j2c icns ico im iim tif tiff jfif jpe jpg jpeg mpg mpeg msp pcd pxr pbm pgm ppm pnm psd bw rgb "
    "rgba sgi ras tga icb vda vst webp wmf emf xbm xpm".split())

#: decode("spec") -> (array type, element type, Pillow mode): webdataset's imagespecs.
IMAGE_SPECS = {
    "l8": ("numpy", "uint8", "l"), "rgb8": ("numpy", "uint8", "rgb"), "rgba8": ("numpy", "uint8", "rgba"),
    "l": ("numpy", "float", "l"), "rgb": ("numpy", "float", "rgb"), "rgba": ("numpy", "float", "rgba"),
    "torchl8": ("torch", "uint8", "l"), "torchrgb8": ("torch", "uint8", "rgb"),
    "torchrgba8": ("torch", "uint8", "rgba"), "torchl": ("torch", "float", "l"),
    "torchrgb": ("torch", "float", "rgb"), "torch": ("torch", "float", "rgb"),
    "torchrgba": ("torch", "float", "rgba"), "pill": ("pil", None, "l"), "pil": ("pil", None, "rgb"),
    "pilrgb": ("pil", None, "rgb"), "pilrgba": ("pil", None, "rgba"),
}


def _secure() -> bool:
    return bool(int(os.environ.get("WDS_SECURE", "0")))  # webdataset's switch, same meaning


def _unpickle(data: bytes) -> Any:
    if _secure():
        raise ValueError("unpickling is not allowed when WDS_SECURE=1")
    return pickle.loads(data)


def _torch_load(data: bytes) -> Any:
    import torch
    if _secure():
        raise ValueError("torch.load is not allowed when WDS_SECURE=1")
    weights_only = os.environ.get("WDS_PYTORCH_WEIGHTS_ONLY", "0") == "1"
    return torch.load(io.BytesIO(data), weights_only=weights_only, map_location="cpu")


def _from_webdataset(module: str, name: str) -> Callable[[bytes], Any]:
    """Formats only webdataset (or its optional dependencies) can read: borrowed when installed."""
    def load(data: bytes) -> Any:
        try:
            import importlib
            f = getattr(importlib.import_module(f"webdataset.{module}"), name)
        except ImportError as e:
            raise ValueError(f"this field needs the webdataset package ({module}.{name}): {e}") from e
        return f(data)
    return load


def _npy(data: bytes) -> np.ndarray:
    return np.lib.format.read_array(io.BytesIO(data))


_INT = int
_TABLE: Dict[str, Callable[[bytes], Any]] = {
    "txt": lambda d: d.decode("utf-8"), "text": lambda d: d.decode("utf-8"),
    "transcript": lambda d: d.decode("utf-8"),
    "cls": _INT, "cls2": _INT, "index": _INT, "inx": _INT, "id": _INT,
    "json": json.loads, "jsn": json.loads,
    "pkl": _unpickle, "pickle": _unpickle, "pyd": _unpickle, "pth": _torch_load,
    "ten": _from_webdataset("autodecode", "tenbin_loads"), "tb": _from_webdataset("autodecode", "tenbin_loads"),
    "mp": _from_webdataset("autodecode", "msgpack_loads"), "msg": _from_webdataset("autodecode", "msgpack_loads"),
    "npy": _npy, "npz": lambda d: dict(np.load(io.BytesIO(d))),
    "cbor": _from_webdataset("autodecode", "cbor_loads"),
}


def _extension(key: str) -> str:
    return re.sub(r".*[.]", "", key)


def basichandlers(key: str, data: bytes) -> Any:
    """The extension table (webdataset's default post handler); None when the extension is not in it."""
    f = _TABLE.get(_extension(key))
    return f(data) if f is not None else None


class _Continue:
    def __init__(self, key: str, data: bytes):
        self.key, self.data = key, data


def _gunzip(key: str, data: bytes) -> Optional[_Continue]:
    if not key.endswith(".gz"):
        return None
    return _Continue(key[:-3], gzip.decompress(data))


class ImageHandler:
    """Decodes image fields with Pillow as ``spec`` says (a key of IMAGE_SPECS); None for other fields."""

    def __init__(self, spec: str, extensions: Iterable[str] = IMAGE_EXTENSIONS):
        if spec not in IMAGE_SPECS:
            raise ValueError(f"decode(): unknown image spec {spec!r}; one of {', '.join(IMAGE_SPECS)}")
        self.spec = spec.lower()
        self.extensions = set(extensions)

    def __call__(self, key: str, data: bytes) -> Any:
        import PIL.Image
        if _extension(key).lower() not in self.extensions:
            return None
        atype, etype, mode = IMAGE_SPECS[self.spec]
        with io.BytesIO(data) as stream:
            img = PIL.Image.open(stream)
            img.load()
            img = img.convert(mode.upper())
        if atype == "pil":
            return img
        a = np.asarray(img)
        if etype == "float":
            a = a.astype(np.float32) / 255.0
        if mode == "l" and a.ndim == 3:
            a = np.mean(a[:, :, :3], axis=2)
        elif mode == "rgb" and a.ndim == 2:
            a = np.repeat(a[:, :, np.newaxis], 3, axis=2)
        elif mode == "rgb" and a.shape[2] == 4:
            a = a[:, :, :3]
        elif mode == "rgba" and a.ndim == 2:
            a = np.repeat(a[:, :, np.newaxis], 4, axis=2)
            a[:, :, 3] = 255
        elif mode == "rgba" and a.shape[2] == 3:
            a = np.concatenate([a, 255 * np.ones(a.shape[:2])], axis=2)
        if atype == "numpy":
            return a
        import torch
        return torch.from_numpy((a.transpose(2, 0, 1) if a.ndim == 3 else a).copy())

    def __repr__(self) -> str:
        return f"ImageHandler({self.spec!r})"


class Decoder:
    """A sample (dict of field -> bytes) -> the dict of decoded fields, webdataset's rules.

    Errors are DataError naming the shard, the sample's key and the field, chained to the cause.
    """

    def __init__(self, handlers: Sequence[Any], pre: Optional[List[Callable]] = None,
                 post: Optional[List[Callable]] = None, only: Any = None, partial: bool = False):
        handlers = [ImageHandler(h) if isinstance(h, str) else h for h in handlers]
        for h in [*handlers, *(pre or []), *(post or [])]:
            if not callable(h):
                raise TypeError(f"decode(): a handler must be an image spec string or a callable(key, data), got {h!r}")
        if isinstance(only, str):
            only = only.split()
        self.only = None if only is None else set(only)
        self.handlers = list(pre if pre is not None else [_gunzip]) + handlers + list(
            post if post is not None else [basichandlers])
        self.partial = partial

    def decode1(self, key: str, data: bytes) -> Any:
        key = "." + key
        for f in self.handlers:
            result = f(key, data)
            if isinstance(result, _Continue) or type(result).__name__ == "Continue":  # ours or webdataset's
                key, data = result.key, result.data
                continue
            if result is not None:
                return result
        return data

    def __call__(self, sample: Dict[str, Any]) -> Dict[str, Any]:
        if not isinstance(sample, dict):
            raise TypeError(f"decode(): a sample must be a dict (decode before to_tuple), got {type(sample).__name__}")
        result = {}
        for k, v in list(sample.items()):
            try:
                if k[:2] == "__":
                    if isinstance(v, bytes):
                        try:
                            v = v.decode("utf-8")
                        except UnicodeDecodeError:
                            pass
                    result[k] = v
                elif self.only is not None and k not in self.only:
                    result[k] = v
                elif self.partial and not isinstance(v, bytes):
                    result[k] = v
                else:
                    if not isinstance(v, bytes):
                        raise TypeError(f"field is a {type(v).__name__}, not bytes (decoded twice?)")
                    result[k] = self.decode1(k, v)
            except Exception as e:
                e2 = _C.DataError(f"WebDataset decode: shard {sample.get('__url__')!r} sample "
                                  f"{sample.get('__key__')!r} field {k!r}: {type(e).__name__}: {e}")
                e2.code = "invalid data"
                raise e2 from e
        return result
