#!/usr/bin/env python3
"""Trains a torchvision ResNet on an ImageFolder, fed by HabanaDataLoader (or torch's DataLoader,
or synthetic batches), printing the loss, training images/s and the GPU's idle share.

    PYTHONPATH=build/python python3 samples/train_resnet.py build/corpus/imagenet/train
    PYTHONPATH=build/python python3 samples/train_resnet.py DIR --arch resnet50 --amp --channels-last \\
        --batch-size 256 --inputs synthetic,torch,hdl,hdl-cuda

--inputs runs one training per input, one after another in this process, on the same files,
model and settings (a fresh model each), and prints a table with each rate against the
synthetic upper bound:
  synthetic  one random batch made once on the device (no input pipeline): the upper bound
  torch      torch's DataLoader (PIL, --workers processes, pin_memory), copied with non_blocking
  hdl        HabanaDataLoader with CPU batches (pinned), copied with non_blocking
  hdl-cuda   HabanaDataLoader(device="cuda"): CUDA batches, JPEGs decoded (window and resize
             fused) on CPU threads, flip and normalise on the device (the default decoder)
  hdl-cuda-hw  the same with decoder="hardware": JPEGs on the GPU's hardware engines with CPU
             threads sharing the load, the crops and resizes on the device
The transforms are torchvision's training ones: RandomResizedCrop, RandomHorizontalFlip,
ToTensor, Normalize.

The GPU's idle share is the fraction of the measured steps' time in which the GPU had no
training work queued: CUDA events are recorded on the training stream just before each step's
forward pass and just after its optimizer step; the gaps between one step's end and the next
one's start, summed, over the time from the first start to the last end. Waiting for a batch
(and its host-to-device copy) is what fills those gaps.

Runs on the CPU without CUDA (then use --image-size 64 and a small --batch-size).
"""

import argparse
import os
import time

import torch
import torchvision
import torchvision.transforms as T

from habana_dataloader import HabanaDataLoader

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
INPUTS = ("synthetic", "torch", "hdl", "hdl-cuda", "hdl-cuda-hw")


def make_loader(kind: str, dataset, args, device: torch.device):
    loader_args = dict(batch_size=args.batch_size, shuffle=True, drop_last=True,
                       num_workers=args.workers, pin_memory=device.type == "cuda")
    if kind == "torch":
        return torch.utils.data.DataLoader(dataset, persistent_workers=args.workers > 0,
                                           generator=torch.Generator().manual_seed(args.seed), **loader_args)
    if kind.startswith("hdl-cuda"):
        loader_args.update(device="cuda", pin_memory=False, decoder="hardware" if kind == "hdl-cuda-hw" else "auto")
    loader = HabanaDataLoader(dataset, seed=args.seed, **loader_args)
    note = "" if loader.native else f" ({loader.fallback_reason})"
    print(f"  HabanaDataLoader native={loader.native}{note}"
          + (f" gpu_ops={loader.gpu_ops}" if kind.startswith("hdl-cuda") else ""), flush=True)
    return loader


def batches(kind: str, dataset, args, device: torch.device, num_classes: int):
    """Endless (images, labels) on `device`, epoch after epoch."""
    if kind == "synthetic":
        g = torch.Generator(device=device).manual_seed(args.seed)
        x = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device, generator=g)
        y = torch.randint(0, num_classes, (args.batch_size,), device=device, generator=g)
        while True:
            yield x, y
    loader = make_loader(kind, dataset, args, device)
    while True:
        for x, y in loader:
            yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)


def train(kind: str, dataset, args, device: torch.device) -> dict:
    torch.manual_seed(args.seed)
    num_classes = len(dataset.classes)
    model = getattr(torchvision.models, args.arch)(num_classes=num_classes).to(device)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    amp = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.amp)
    cuda = device.type == "cuda"
    total = args.warmup + args.steps
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(total)] if cuda else []
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(total)] if cuda else []
    loss_sum = torch.zeros((), device=device)
    t_first = time.perf_counter()
    stream = batches(kind, dataset, args, device, num_classes)
    first_batch_s = None
    for step in range(total):
        if step == args.warmup:  # the measured window starts with the GPU drained
            if cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        images, labels = next(stream)
        if first_batch_s is None:
            first_batch_s = time.perf_counter() - t_first
        images = images.contiguous(memory_format=fmt)
        if cuda:
            starts[step].record()
        with amp:
            loss = loss_fn(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if cuda:
            ends[step].record()
        loss_sum += loss.detach().float()
        if (step + 1) % args.print_every == 0:  # one host sync per print, not per step
            print(f"  step {step + 1:4d}  loss {loss_sum.item() / args.print_every:.3f}", flush=True)
            loss_sum.zero_()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    out = {"input": kind, "images_per_s": args.steps * args.batch_size / seconds, "first_batch_s": first_batch_s}
    if cuda:
        w = range(args.warmup, total)
        span = starts[w[0]].elapsed_time(ends[w[-1]])
        gaps = sum(ends[i - 1].elapsed_time(starts[i]) for i in w if i > w[0])
        out["idle_share"] = gaps / span if span > 0 else float("nan")
        out["step_ms"] = span / len(w)
    del stream
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", help="ImageFolder root (root/<class>/<image>)")
    p.add_argument("--arch", default="resnet18", help="a torchvision.models constructor (resnet18, resnet50, ...)")
    p.add_argument("--inputs", default="hdl", help=f"comma-separated, of {', '.join(INPUTS)}")
    p.add_argument("--steps", type=int, default=200, help="measured steps per input")
    p.add_argument("--warmup", type=int, default=10, help="steps before the measured ones (cudnn, pools)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--workers", type=int, default=2, help="torch workers / native threads (0: one per core)")
    p.add_argument("--amp", action="store_true", help="bfloat16 autocast")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--print-every", type=int, default=10)
    p.add_argument("--torch", action="store_true", help="same as --inputs torch")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    kinds = ["torch"] if args.torch else args.inputs.split(",")
    for k in kinds:
        if k not in INPUTS:
            p.error(f"--inputs: {k!r} is not one of {', '.join(INPUTS)}")
    if args.workers == 0:
        args.workers = os.cpu_count()
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    transform = T.Compose([T.RandomResizedCrop(args.image_size), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize(MEAN, STD)])
    dataset = torchvision.datasets.ImageFolder(args.root, transform)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"{args.arch}, {len(dataset)} images, {len(dataset.classes)} classes, batch {args.batch_size}, "
          f"amp {args.amp}, channels_last {args.channels_last}, {name}, torch {torch.__version__}, "
          f"{os.cpu_count()} CPUs, workers/threads {args.workers}", flush=True)
    results = []
    for k in kinds:
        print(f"{k}:", flush=True)
        r = train(k, dataset, args, device)
        results.append(r)
        idle = f"  idle {100 * r['idle_share']:5.1f}%  step {r['step_ms']:6.1f} ms" if "idle_share" in r else ""
        print(f"{k:10s} {r['images_per_s']:9.1f} images/s{idle}  first batch {r['first_batch_s']:.2f} s", flush=True)
    base = next((r for r in results if r["input"] == "synthetic"), None)
    print(f"\n{args.arch} (batch {args.batch_size}, amp {args.amp}, channels_last {args.channels_last}, "
          f"{args.steps} measured steps each)")
    for r in results:
        ratio = f"  {r['images_per_s'] / base['images_per_s']:.3f}x synthetic" if base else ""
        idle = f"  GPU idle {100 * r['idle_share']:5.1f}%" if "idle_share" in r else ""
        print(f"  {r['input']:10s} {r['images_per_s']:9.1f} images/s{ratio}{idle}")


if __name__ == "__main__":
    main()
