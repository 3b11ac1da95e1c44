# Golden geometry from torchvision 0.14 for crop_geometry_test.cc and fused_decode_region_test.cc
# (run with /usr/bin/python3).
#
#   RRC H W seed scale_lo scale_hi ratio_lo ratio_hi   a RandomResizedCrop.get_params call, then
#   U value / I value                                  its raw draws in call order (uniform_ and
#   WIN top left h w                                   randint results) and the returned window
#   CC H W h w top left                                F.center_crop's offset (negative: padded)
#   RS H W size max_size h w                           F.resize output size (max_size 0: None;
#                                                      -1 -1: torch refuses, a side would be 0)
import sys

import torch
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode, RandomResizedCrop

draws = []
_uniform = torch.Tensor.uniform_
_randint = torch.randint


def recording_uniform(self, *args, **kwargs):
    out = _uniform(self, *args, **kwargs)
    draws.append(("U", repr(out.item())))
    return out


def recording_randint(*args, **kwargs):
    out = _randint(*args, **kwargs)
    draws.append(("I", str(out.item())))
    return out


def rrc_cases():
    sizes = [(375, 500), (500, 375), (333, 333), (224, 224), (7, 9), (1, 1000), (1000, 3),
             (17, 4000), (4000, 17), (2, 2), (97, 61)]
    params = [((0.08, 1.0), (3.0 / 4.0, 4.0 / 3.0)), ((0.5, 1.0), (0.5, 2.0)),
              ((0.9, 1.0), (3.0, 4.0)), ((0.01, 0.02), (0.2, 0.25))]
    torch.Tensor.uniform_ = recording_uniform
    torch.randint = recording_randint
    try:
        for h, w in sizes:
            img = torch.zeros((1, h, w), dtype=torch.uint8)
            for scale, ratio in params:
                for seed in range(12):
                    torch.manual_seed(seed)
                    draws.clear()
                    i, j, ch, cw = RandomResizedCrop.get_params(img, list(scale), list(ratio))
                    print("RRC", h, w, seed, *map(repr, scale + ratio))
                    for kind, v in draws:
                        print(kind, v)
                    print("WIN", i, j, ch, cw)
    finally:
        torch.Tensor.uniform_ = _uniform
        torch.randint = _randint


def cc_cases():
    for h, w in [(375, 500), (333, 333), (7, 9), (256, 341), (255, 340), (10, 4), (1, 1)]:
        img = (torch.arange(h * w, dtype=torch.int64) + 1).reshape(1, h, w)
        for ch, cw in [(224, 224), (5, 5), (4, 6), (3, 3), (8, 8), (10, 11), (300, 1), (1, 400), (2, 2)]:
            out = F.center_crop(img, [ch, cw])[0]
            nz = (out != 0).nonzero()
            r, c = nz[0].tolist()
            y, x = divmod(int(out[r, c]) - 1, w)
            print("CC", h, w, ch, cw, y - r, x - c)


def rs_cases():
    for h, w in [(375, 500), (500, 375), (333, 333), (7, 9), (1, 1000), (999, 1001), (481, 640), (17, 4000)]:
        for size, max_size in [(256, 0), (224, 0), (33, 0), (1, 0), (256, 300), (100, 120), (7, 1000)]:
            try:
                out = F.resize(torch.zeros((1, h, w)), [size], InterpolationMode.NEAREST,
                               max_size=max_size or None)
                print("RS", h, w, size, max_size, out.shape[1], out.shape[2])
            except (RuntimeError, ValueError):  # a side rounded to 0: torch refuses
                print("RS", h, w, size, max_size, -1, -1)


if __name__ == "__main__":
    rrc_cases()
    cc_cases()
    rs_cases()
    sys.stdout.flush()
