#!/usr/bin/env python3
"""HabanaDataLoader(python_tail=True) against torch's DataLoader on a chain with a transform that
has no native mapping (a script's own PIL class), and that transform's own cost per image: the
Python tail's calls are serialised, so 1 / (its time per image) bounds the loader's rate on
any number of cores, while torch's worker processes scale with them.

    PYTHONPATH=build/python /usr/bin/python3 samples/benchmark/python_tail_bench.py \
        [--root build/corpus/imagenet/train] [--batches 6] [--rounds 2] [--workers 2]
"""
import argparse
import statistics
import time
import warnings

import torch
import torchvision
import torchvision.transforms as T
from PIL import Image, ImageFilter

from habana_dataloader import HabanaDataLoader


class Unsharp:  # a script's own PIL transform: no native mapping
    def __call__(self, img):
        return img.filter(ImageFilter.UnsharpMask(2, 150, 3))


def rate(loader, batches):
    it = iter(loader)
    next(it)  # warm-up: workers / pipeline start
    t, n = time.perf_counter(), 0
    for _ in range(batches):
        n += len(next(it)[1])
    return n / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="build/corpus/imagenet/train")
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    norm = T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    tf = T.Compose([T.RandomResizedCrop(224), Unsharp(), T.RandomHorizontalFlip(), T.ToTensor(), norm])
    ds = torchvision.datasets.ImageFolder(a.root, tf)
    img = Image.open(ds.samples[0][0]).convert("RGB").resize((224, 224))
    u, t = Unsharp(), time.perf_counter()
    for _ in range(200):
        u(img)
    t_py = (time.perf_counter() - t) / 200
    res = {"python_tail": [], "torch": []}
    for _ in range(a.rounds):
        res["python_tail"].append(rate(HabanaDataLoader(ds, batch_size=32, shuffle=True, python_tail=True,
                                                        threads=a.workers), a.batches))
        res["torch"].append(rate(torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True,
                                                             num_workers=a.workers), a.batches))
    print({k: [round(v) for v in vs] for k, vs in res.items()}, "images/s")
    print("python_tail / torch (median of rounds): %.2f; Unsharp alone %.2f ms per 224x224 image, so the tail "
          "is bound at %.0f images/s on any core count" % (
              statistics.median(x / y for x, y in zip(res["python_tail"], res["torch"])), t_py * 1e3, 1 / t_py))


if __name__ == "__main__":
    main()
