"""HabanaDataLoader throughput and epoch-start latency on the corpus eval chain (not a test).

    PYTHONPATH=build/python /usr/bin/python3 samples/benchmark/loader_bench.py \
        [--root build/corpus/imagenet/val] [--batch 64] [--epochs 6] [--threads 0] [--torch]

Prints, per epoch, how long ``iter(loader)`` itself took (epoch set-up), the time from
``iter(loader)`` to the first batch and the epoch's images/s; then the median and minimum over
epochs >= 2 (the first includes warm-up; for images/s the maximum), process CPU time per image, and the loader's pipeline count.
"""

import argparse
import statistics
import time

import torch
import torchvision
import torchvision.transforms as T

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
EVAL = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="build/corpus/imagenet/val")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--shuffle", action="store_true")
    ap.add_argument("--torch", action="store_true", help="torch's DataLoader instead (num_workers=threads)")
    a = ap.parse_args()
    ds = torchvision.datasets.ImageFolder(a.root, EVAL)
    if a.torch:
        loader = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=a.shuffle, num_workers=a.threads)
    else:
        from habana_dataloader import HabanaDataLoader
        loader = HabanaDataLoader(ds, batch_size=a.batch, shuffle=a.shuffle, threads=a.threads, strict=True)
    setup, first, rate, cpu = [], [], [], []
    for epoch in range(a.epochs):
        c0 = time.process_time()
        t0 = time.perf_counter()
        it = iter(loader)
        t_iter = time.perf_counter() - t0
        n, t_first = 0, None
        for x, _ in it:
            if t_first is None:
                t_first = time.perf_counter() - t0
            n += x.shape[0]
        dt = time.perf_counter() - t0
        cpu.append(time.process_time() - c0)
        setup.append(t_iter)
        first.append(t_first)
        rate.append(n / dt)
        print(f"epoch {epoch}: iter() {t_iter * 1e3:6.1f} ms, first batch {t_first * 1e3:7.1f} ms, "
              f"{n / dt:7.1f} images/s ({n} images, {dt:.2f} s, {cpu[-1]:.2f} s CPU)")
    for name, f in (("median", statistics.median), ("min", min)):
        print(f"{name} of epochs 1..{a.epochs - 1}: iter() {f(setup[1:]) * 1e3:.1f} ms, first batch "
              f"{f(first[1:]) * 1e3:.1f} ms, {(max if f is min else f)(rate[1:]):.1f} images/s, "
              f"{f(cpu[1:]) * 1e3 / n:.2f} ms CPU/image")
    built = getattr(loader, "_pipelines_built", None)
    if built is not None:
        print(f"C++ pipelines built: {built}")


if __name__ == "__main__":
    main()
