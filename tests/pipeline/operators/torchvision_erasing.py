# Golden RandomErasing geometry from torchvision 0.14 for random_erasing_test.cc (run with
# /usr/bin/python3; about 3 s).
#
#   RE H W seed scale_lo scale_hi ratio_lo ratio_hi   a RandomErasing.get_params call, then
#   U value / I value                                 its raw draws in call order (uniform_ and
#   ERASE top left h w  or  ERASE none                randint results) and the rectangle
#   LAW H W scale_lo scale_hi ratio_lo ratio_hi N     N get_params calls from torch's own RNG
#   top left h w  or  none                            (seed 0), one line each: the law to match
import sys

import torch
from torchvision.transforms import RandomErasing

torch.set_num_threads(1)
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


def rect(img, out):
    i, j, h, w, v = out
    return "none" if v is img else f"{i} {j} {h} {w}"


def recorded_cases():
    sizes = [(224, 224), (32, 32), (375, 500), (7, 9), (1, 1000), (2, 2), (97, 61)]
    params = [((0.02, 0.33), (0.3, 3.3)), ((0.5, 1.0), (0.5, 2.0)), ((0.0, 0.01), (1.0, 1.0)),
              ((0.1, 0.4), (1 / 3, 3.0))]
    torch.Tensor.uniform_ = recording_uniform
    torch.randint = recording_randint
    try:
        for h, w in sizes:
            img = torch.zeros((3, h, w))
            for scale, ratio in params:
                for seed in range(10):
                    torch.manual_seed(seed)
                    draws.clear()
                    out = RandomErasing.get_params(img, scale, ratio, value=[0.0])
                    print("RE", h, w, seed, *map(repr, scale + ratio))
                    for kind, v in draws:
                        print(kind, v)
                    print("ERASE", rect(img, out))
    finally:
        torch.Tensor.uniform_ = _uniform
        torch.randint = _randint


def law_cases(n):
    torch.manual_seed(0)
    for (h, w), scale, ratio in [((224, 224), (0.02, 0.33), (0.3, 3.3)),
                                 ((32, 32), (0.02, 0.4), (0.3, 3.3)),
                                 ((20, 30), (0.6, 1.0), (0.5, 4.0))]:
        img = torch.zeros((3, h, w))
        print("LAW", h, w, *map(repr, scale + ratio), n)
        for _ in range(n):
            print(rect(img, RandomErasing.get_params(img, scale, ratio, value=[0.0])))


if __name__ == "__main__":
    recorded_cases()
    law_cases(int(sys.argv[1]) if len(sys.argv) > 1 else 4000)
