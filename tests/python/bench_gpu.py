"""HabanaDataLoader into CUDA tensors: the gpu stage against CPU batches (not a test).

    PYTHONPATH=build/python python3 tests/python/bench_gpu.py [--root DIR] [--files 3600]
        [--batch 256] [--epochs 4] [--threads 0]

Builds an ImageFolder of --files entries (the photos under --root, repeated through symlinks
when there are fewer), then runs torchvision's ResNet training transforms (RandomResizedCrop
224, RandomHorizontalFlip, ToTensor, Normalize) through HabanaDataLoader three ways, in one
run, on the same files and cores:
  cpu       batches stay on the CPU (device=None): the baseline rate
  torch     CPU batches moved by the consumer: pin_memory() + .to("cuda", non_blocking=True)
            (what device="cuda" did before the gpu stage)
  gpu       device="cuda": RandomResizedCrop (decode of the window + resize) on CPU threads,
            the uint8 crops uploaded from pinned memory, flip + normalise + layout as one CUDA
            kernel per batch on the pipeline's stream
  gpu-resize  the same with the resize moved to the GPU too (one launch per image): the
            decoder hands over the window at full scale
  gpu-hw    device="cuda", decoder="hardware": JPEGs decoded by the GPU's hardware engines with
            CPU threads sharing the load (the mixed stage), RandomResizedCrop as a gpu kernel
            (skipped, with the reason, without engines)
The consumer of CUDA batches queues a reduction on each (on torch's current stream) and
synchronises at the end of each epoch; CPU batches are only taken. Prints per mode: images/s over epochs >= 2 (median), process
CPU-seconds per image, time to the first batch, pinned and device pool bytes per epoch; then
the ratios against cpu.
"""

import argparse
import os
import statistics
import tempfile
import time

import torch
import torchvision
import torchvision.transforms as T

from habana_dataloader import HabanaDataLoader
from habana_dataloader import loader as hdl_loader

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
TRAIN = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])


def make_tree(root: str, files: int, out: str) -> None:
    photos = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.lower().endswith((".jpeg", ".jpg")))
    if not photos:
        raise SystemExit(f"no JPEG files under {root}")
    for i in range(files):
        cls = os.path.join(out, f"c{i % 10:02d}")
        os.makedirs(cls, exist_ok=True)
        os.symlink(os.path.abspath(photos[i % len(photos)]), os.path.join(cls, f"{i:06d}.jpg"))


def run(mode: str, tree: str, a) -> dict:
    ds = torchvision.datasets.ImageFolder(tree, TRAIN)
    hdl_loader._SPLIT_RESIZE = mode == "gpu-resize"
    loader = HabanaDataLoader(ds, batch_size=a.batch, shuffle=True, threads=a.threads, seed=1,
                              device="cuda" if mode.startswith("gpu") else None, strict=True,
                              decoder="hardware" if mode == "gpu-hw" else "cpu")
    rates, cpu, first, pools = [], [], [], []
    sink = torch.zeros((), device="cuda")
    for epoch in range(a.epochs):
        torch.cuda.synchronize()
        c0, t0 = time.process_time(), time.perf_counter()
        n = 0
        for k, (images, labels) in enumerate(loader):
            if mode == "torch":
                images = images.pin_memory().to("cuda", non_blocking=True)
                labels = labels.pin_memory().to("cuda", non_blocking=True)
            if k == 0:
                torch.cuda.synchronize()
                first.append(time.perf_counter() - t0)
            if mode != "cpu":  # a CUDA consumer's first use (no host work); CPU batches are just taken
                sink += images.float().mean() + labels.sum()
            n += images.shape[0]
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        rates.append(n / dt)
        cpu.append((time.process_time() - c0) / n)
        s = loader._pipe.stats() if loader._pipe is not None else {}
        pools.append((s.get("pool", {}).get("bytes_allocated", 0), s.get("device_pool", {}).get("bytes_allocated", 0)))
    if loader._pipe is not None:  # where the pipeline's time goes (worker / device-stage host time)
        for op in loader._pipe.stats()["operators"]:
            if op["samples"]:
                print(f"    {mode:10s} {op['name']:24s} {op['op']:22s} {op['seconds'] * 1e6 / op['samples']:8.1f} us/sample",
                      flush=True)
    later = slice(1, None) if a.epochs > 1 else slice(None)
    out = {"mode": mode, "images_per_s": statistics.median(rates[later]), "cpu_s_per_image": statistics.median(cpu[later]),
           "first_batch_s": first, "rates": rates, "pools": pools, "gpu_ops": loader.gpu_ops}
    print(f"{mode:10s} {out['images_per_s']:9.0f} images/s  {out['cpu_s_per_image'] * 1e3:7.3f} CPU-ms/image  "
          f"first batch {', '.join(f'{f:.3f}' for f in first)} s  pools (pinned, device) per epoch {pools}  "
          f"gpu_ops {loader.gpu_ops}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="build/corpus/imagenet/train")
    ap.add_argument("--files", type=int, default=3600)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--modes", default="cpu,torch,gpu,gpu-resize,gpu-hw")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {os.cpu_count()} CPUs, "
          f"{a.files} files, batch {a.batch}, threads {a.threads or os.cpu_count()}", flush=True)
    with tempfile.TemporaryDirectory() as tree:
        make_tree(a.root, a.files, tree)
        modes = a.modes.split(",")
        if "gpu-hw" in modes and not hdl_loader._C.hardware_jpeg_status(0)["available"]:
            print(f"gpu-hw skipped: {hdl_loader._C.hardware_jpeg_status(0)['reason']}")
            modes.remove("gpu-hw")
        results = {m: run(m, tree, a) for m in modes}
    base = results.get("cpu")
    if base:
        for m, r in results.items():
            print(f"{m:10s} rate {r['images_per_s'] / base['images_per_s']:.2f}x cpu, CPU-seconds per image "
                  f"{r['cpu_s_per_image'] / base['cpu_s_per_image']:.2f}x cpu")


if __name__ == "__main__":
    main()
