#!/usr/bin/python3
"""torchvision 0.14 side of resize_bench.cc: F.resize of the same 500x375 photo (uint8 CHW
tensor) to 224x224, ns/op. `resize_bench_torchvision.py BUILD_DIR [threads]`."""
import sys
import timeit

import numpy as np
import torch
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode as M

torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
a = np.fromfile(sys.argv[1] + "/kernels_references/photo.u8", dtype=np.uint8).reshape(375, 500, 3)
t = torch.from_numpy(a).permute(2, 0, 1).contiguous()
for name, mode, aa in (("bilinear aa  u8", M.BILINEAR, True), ("bicubic aa   u8", M.BICUBIC, True),
                       ("bilinear     u8", M.BILINEAR, False), ("nearest      u8", M.NEAREST, False)):
    f = lambda: F.resize(t, [224, 224], mode, antialias=aa)
    for _ in range(20):
        f()
    n = 300
    ns = timeit.timeit(f, number=n) / n * 1e9
    print(f"torchvision resize 500x375 -> 224x224 {name} (threads={torch.get_num_threads()}): {ns:.0f} ns/op")
