"""ClipEvalTransform and ClipTrainTransform: torchvision's video_classification transforms on
decoded clips, which HabanaDataLoader maps to native operators (habana_dataloader.video)."""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple, Union

import torch
import torchvision.transforms.functional as TF

from ._video_common import _INTERPOLATIONS, _LAYOUTS, KINETICS_MEAN, KINETICS_STD

def _size(v: Any, what: str) -> List[int]:
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    v = [int(x) for x in v]
    if len(v) not in (1, 2) or min(v) < 1:
        raise ValueError(f"{what} must be an int or (h, w) of positive ints, got {v!r}")
    return v


def _hw(v: Any, what: str) -> List[int]:
    s = _size(v, what)
    return s * 2 if len(s) == 1 else s


def _check_common(mean, std, layout, interpolation) -> Tuple[Optional[List[float]], Optional[List[float]]]:
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(_LAYOUTS)}, got {layout!r}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {', '.join(_INTERPOLATIONS)}, got {interpolation!r}")
    if (mean is None) != (std is None):
        raise ValueError("give both mean and std, or neither")
    if mean is None:
        return None, None
    mean, std = [float(m) for m in mean], [float(s) for s in std]
    if len(mean) not in (1, 3) or len(std) not in (1, 3) or min(std) <= 0:
        raise ValueError(f"mean and std take 1 or 3 values (std > 0), got {mean!r}, {std!r}")
    return mean, std


def _resize(x: torch.Tensor, size: List[int], interpolation: str, antialias: bool) -> torch.Tensor:
    mode = TF.InterpolationMode(interpolation)
    return TF.resize(x, size, interpolation=mode, antialias=antialias and interpolation != "nearest")


def _finish(x: torch.Tensor, mean, std, layout: str) -> torch.Tensor:
    """[T, C, h, w] uint8 -> float32 in [0, 1], normalised, in `layout`."""
    x = x.float().div(255)
    if mean is not None:
        x = TF.normalize(x, mean, std)
    if layout == "CTHW":
        x = x.permute(1, 0, 2, 3)
    elif layout == "THWC":
        x = x.permute(0, 2, 3, 1)
    return x.contiguous()


def _random_offset(size: int, crop: int, g: Optional[torch.Generator]) -> int:
    """A uniform integer window offset along an axis: torchvision RandomCrop's
    torch.randint(0, size - crop + 1) when the crop fits; else minus a uniform integer in
    [0, crop - size] (the frame lies inside a zero-padded window). The native path draws the
    same law: crop_mirror_normalize(crop_pos_bins=True) over a uniform crop_pos."""
    if size >= crop:
        return int(torch.randint(0, size - crop + 1, size=(1,), generator=g).item())
    return -int(torch.randint(0, crop - size + 1, size=(1,), generator=g).item())


def _clip_tchw(clip: torch.Tensor) -> torch.Tensor:
    if not isinstance(clip, torch.Tensor) or clip.dim() != 4 or clip.dtype != torch.uint8:
        got = f"{tuple(clip.shape)} {clip.dtype}" if isinstance(clip, torch.Tensor) else type(clip).__name__
        raise TypeError(f"a clip transform takes a uint8 tensor [T, H, W, C], got {got}")
    return clip.permute(0, 3, 1, 2)


class ClipEvalTransform:
    """torchvision's VideoClassificationPresetEval for a [T, H, W, C] uint8 clip, in the order
    the native path runs it: Resize(resize) (bilinear, antialiased, on uint8 as decoded), then
    CenterCrop(crop_size), then /255 and Normalize(mean, std), then ``layout``: "CTHW" (3-D
    CNNs; the preset's ConvertBCHWtoCBHW), "TCHW" or "THWC". ``resize`` None or ``crop_size``
    None skips that step. (The preset resizes after converting to float; resizing the uint8
    clip rounds once more, within one uint8 step.)

    Natively: video_reader(resize=..., center_crop=...) + crop_mirror_normalize."""

    takes_generator = True

    def __init__(self, resize: Optional[Union[int, Sequence[int]]] = (128, 171),
                 crop_size: Optional[Union[int, Sequence[int]]] = 112, mean: Optional[Sequence[float]] = KINETICS_MEAN,
                 std: Optional[Sequence[float]] = KINETICS_STD, layout: str = "CTHW",
                 interpolation: str = "bilinear", antialias: bool = True):
        self.resize = _size(resize, "resize") if resize is not None else None
        self.crop_size = _hw(crop_size, "crop_size") if crop_size is not None else None
        self.mean, self.std = _check_common(mean, std, layout, interpolation)
        self.layout, self.interpolation, self.antialias = layout, interpolation, bool(antialias)

    def __call__(self, clip: torch.Tensor, generator: Optional[torch.Generator] = None) -> torch.Tensor:
        x = _clip_tchw(clip)
        if self.resize is not None:
            x = _resize(x, self.resize, self.interpolation, self.antialias)
        if self.crop_size is not None:
            x = TF.center_crop(x, self.crop_size)
        return _finish(x, self.mean, self.std, self.layout)

    def __repr__(self) -> str:
        return (f"ClipEvalTransform(resize={self.resize}, crop_size={self.crop_size}, mean={self.mean}, "
                f"std={self.std}, layout={self.layout!r}, interpolation={self.interpolation!r})")


class ClipTrainTransform:
    """A training transform for a [T, H, W, C] uint8 clip; one window and one flip per clip.

    Two modes:
    - ``resize`` given (default (128, 171), torchvision's VideoClassificationPresetTrain):
      Resize(resize), then RandomCrop(crop_size): each offset a uniform integer in [0, H - h]
      (drawn as torchvision's RandomCrop.get_params draws it: top, then left; natively
      crop_mirror_normalize's crop_pos_bins over a uniform crop_pos, the same law);
    - ``scale`` given (and ``resize=None``): RandomResizedCrop(crop_size, scale, ratio), the
      window drawn as torchvision draws it, on the clip's frame size.
    Then a horizontal flip with probability ``hflip_prob``, /255, Normalize(mean, std), and
    ``layout`` ("CTHW", "TCHW" or "THWC").

    Draws come from ``generator`` when given (VideoFolder passes its per-clip generator with
    ``seed=``), else torch's global RNG. Natively: video_reader(resize=...) +
    crop_mirror_normalize(crop, crop_pos_x/y = random_uniform, crop_pos_bins, mirror = coin_flip), or
    video_reader(random_crop="resized", scale, ratio, resize=crop_size) + crop_mirror_normalize.
    """

    takes_generator = True

    def __init__(self, crop_size: Union[int, Sequence[int]] = 112,
                 resize: Optional[Union[int, Sequence[int]]] = (128, 171),
                 scale: Optional[Sequence[float]] = None, ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
                 hflip_prob: float = 0.5, mean: Optional[Sequence[float]] = KINETICS_MEAN,
                 std: Optional[Sequence[float]] = KINETICS_STD, layout: str = "CTHW",
                 interpolation: str = "bilinear", antialias: bool = True):
        if (resize is None) == (scale is None):
            raise ValueError("ClipTrainTransform takes resize (Resize + random crop) or scale "
                             "(RandomResizedCrop), not both and not neither")
        self.crop_size = _hw(crop_size, "crop_size")
        self.resize = _size(resize, "resize") if resize is not None else None
        self.scale = [float(s) for s in scale] if scale is not None else None
        self.ratio = [float(r) for r in ratio]
        if self.scale is not None and not (len(self.scale) == 2 and 0 < self.scale[0] <= self.scale[1]):
            raise ValueError(f"scale must be (min, max) with 0 < min <= max, got {scale!r}")
        if not (len(self.ratio) == 2 and 0 < self.ratio[0] <= self.ratio[1]):
            raise ValueError(f"ratio must be (min, max) with 0 < min <= max, got {ratio!r}")
        if not 0 <= float(hflip_prob) <= 1:
            raise ValueError(f"hflip_prob must be in [0, 1], got {hflip_prob!r}")
        self.hflip_prob = float(hflip_prob)
        self.mean, self.std = _check_common(mean, std, layout, interpolation)
        self.layout, self.interpolation, self.antialias = layout, interpolation, bool(antialias)

    def _rrc_window(self, height: int, width: int, g: Optional[torch.Generator]) -> Tuple[int, int, int, int]:
        # torchvision RandomResizedCrop.get_params, with an optional generator.
        area = height * width
        log_ratio = torch.log(torch.tensor(self.ratio))
        for _ in range(10):
            target_area = area * torch.empty(1).uniform_(self.scale[0], self.scale[1], generator=g).item()
            aspect_ratio = math.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1], generator=g).item())
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                i = torch.randint(0, height - h + 1, size=(1,), generator=g).item()
                j = torch.randint(0, width - w + 1, size=(1,), generator=g).item()
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(self.ratio):
            w = width
            h = int(round(w / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            h = height
            w = int(round(h * max(self.ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, clip: torch.Tensor, generator: Optional[torch.Generator] = None) -> torch.Tensor:
        x = _clip_tchw(clip)
        if self.scale is not None:
            i, j, h, w = self._rrc_window(x.shape[-2], x.shape[-1], generator)
            mode = TF.InterpolationMode(self.interpolation)
            x = TF.resized_crop(x, i, j, h, w, self.crop_size, interpolation=mode,
                                antialias=self.antialias and self.interpolation != "nearest")
        else:
            x = _resize(x, self.resize, self.interpolation, self.antialias)
            ch, cw = self.crop_size
            top = _random_offset(x.shape[-2], ch, generator)  # torchvision RandomCrop.get_params' order
            left = _random_offset(x.shape[-1], cw, generator)
            x = TF.crop(x, top, left, ch, cw)
        if self.hflip_prob > 0 and float(torch.rand((), generator=generator)) < self.hflip_prob:
            x = x.flip(-1)
        return _finish(x, self.mean, self.std, self.layout)

    def __repr__(self) -> str:
        geometry = f"scale={self.scale}, ratio={self.ratio}" if self.scale is not None else f"resize={self.resize}"
        return (f"ClipTrainTransform(crop_size={self.crop_size}, {geometry}, hflip_prob={self.hflip_prob}, "
                f"mean={self.mean}, std={self.std}, layout={self.layout!r})")
