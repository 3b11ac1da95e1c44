#!/usr/bin/env python3
"""Trains torchvision's resnet18 on an ImageFolder with HabanaDataLoader (or, with --torch,
torch's DataLoader) for N steps, printing the loss and images/s.

    PYTHONPATH=build/python /usr/bin/python3 samples/train_resnet.py build/corpus/imagenet/train
    PYTHONPATH=build/python /usr/bin/python3 samples/train_resnet.py DIR --torch --workers 2

Runs on CUDA when present (pinned batches, non-blocking copies), else on the CPU (use
--image-size 64 there to keep a CPU step short).
"""

import argparse
import time

import torch
import torchvision
import torchvision.transforms as T

from habana_dataloader import HabanaDataLoader


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", help="ImageFolder root (root/<class>/<image>)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--workers", type=int, default=2, help="torch workers / native threads")
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch", action="store_true", help="use torch.utils.data.DataLoader instead")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    transform = T.Compose([T.RandomResizedCrop(args.image_size), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    dataset = torchvision.datasets.ImageFolder(args.root, transform)
    loader_args = dict(batch_size=args.batch_size, shuffle=True, drop_last=True,
                       num_workers=args.workers, pin_memory=device.type == "cuda")
    if args.torch:
        loader = torch.utils.data.DataLoader(dataset, **loader_args)
    else:
        loader = HabanaDataLoader(dataset, **loader_args)
        print(f"HabanaDataLoader native={loader.native}" + (f" ({loader.fallback_reason})" if not loader.native else ""))
    model = torchvision.models.resnet18(num_classes=len(dataset.classes)).to(device)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    print(f"{len(dataset)} images, {len(dataset.classes)} classes, {len(loader)} batches/epoch, "
          f"device {device}, loader {'torch' if args.torch else 'habana'}")

    step, seen, t0, window = 0, 0, time.perf_counter(), []
    while step < args.steps:
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = loss_fn(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            seen += images.shape[0]
            window.append(loss.item())
            if step % 10 == 0 or step == args.steps:
                rate = seen / (time.perf_counter() - t0)
                print(f"step {step:4d}  loss {sum(window) / len(window):.3f}  {rate:7.1f} images/s", flush=True)
                window = []
            if step == args.steps:
                break
    total = time.perf_counter() - t0
    print(f"done: {step} steps, {seen} images in {total:.1f} s ({seen / total:.1f} images/s)")


if __name__ == "__main__":
    main()
