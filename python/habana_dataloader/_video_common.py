"""What the video modules share: normalisation constants, video_reader's file endings, the
names the datasets, clip transforms and native mapping agree on (habana_dataloader.video is
the public face)."""

from __future__ import annotations

from typing import Tuple

from . import _C

#: torchvision's references/video_classification normalisation (Kinetics-400).
KINETICS_MEAN = (0.43216, 0.394666, 0.37645)
KINETICS_STD = (0.22803, 0.22145, 0.216989)
#: video_reader's default file name endings.
VIDEO_EXTENSIONS: Tuple[str, ...] = tuple(
    next(a["default"] for a in next(s for s in _C.schemas() if s["name"] == "video_reader")["args"]
         if a["name"] == "extensions"))
_SAMPLERS = ("random", "uniform", "contiguous")
_LAYOUTS = {"CTHW": "CFHW", "TCHW": "CHW", "THWC": "HWC"}  # transform layout -> crop_mirror_normalize's
_INTERPOLATIONS = ("nearest", "bilinear", "bicubic")  # what torchvision's tensor resize has too
_SEED_MASK = (1 << 63) - 1


def _data_error(message: str, code: str = "invalid data") -> Exception:
    e = _C.DataError(message)
    e.code = code
    return e

