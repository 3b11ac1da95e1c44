"""WebDataset tar shards, side by side in one run (issue 23's targets; not a test).

    PYTHONPATH=build/python build/venv-torch2/bin/python samples/benchmark/wds_bench.py \
        [--root build/corpus/imagenet/train] [--batch 64] [--epochs 3] [--workers 2]

Writes ROOT (an ImageFolder) as shards once (habana_dataloader.write_shards, with the index),
then runs torchvision's ResNet training transform (RandomResizedCrop 224, flip, ToTensor,
Normalize) over the same images, one epoch at a time, through:
  folder   HabanaDataLoader(ImageFolder)                    the same loader on loose files
  shards   HabanaDataLoader(habana_dataloader.WebDataset)    native: webdataset_reader
  wds      webdataset.WebDataset + torch's DataLoader       num_workers=--workers (one per core)
and with --gz the same shards gzip'ed (.tar.gz), read natively in streaming mode:
  gz       HabanaDataLoader(WebDataset(".tar.gz" spec))      samples counted first (exact split)
  gz-epoch the same with .with_epoch(N)                      nominal length: nothing counted
and prints images/s per epoch (the best of epochs >= 1; with --cold, of all epochs, each read
with the files evicted from the page cache first), the time from iter() to the first batch
(epoch 0 of a fresh loader: the index is read from its sidecar; "--cold-index" deletes the
sidecars first, so the index is built), and the ratios shards/folder and shards/wds. webdataset
needs pip's torch venv (.ci/torch2.sh pins it); without it that row is skipped.
"""

import argparse
import glob
import os
import tempfile
import time

import torch
import torchvision
import torchvision.transforms as T

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
TRAIN = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])


def evict(files):
    """Drops the files' pages from the page cache (posix_fadvise DONTNEED): the next read is cold."""
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run(name, make, epochs, cold_files=None):
    if cold_files:
        evict(cold_files)
    t0 = time.perf_counter()
    loader = make()
    rates, first = [], None
    for epoch in range(epochs):
        if cold_files:
            evict(cold_files)
        t = time.perf_counter()
        n = 0
        for x, _ in loader:
            if first is None:
                first = time.perf_counter() - t0
            n += x.shape[0]
        rates.append(n / (time.perf_counter() - t))
        print(f"  {name:7s} epoch {epoch}: {rates[-1]:8.1f} images/s ({n} images)", flush=True)
    best = max(rates[1:]) if len(rates) > 1 and not cold_files else max(rates)
    return best, first


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="build/corpus/imagenet/train")
    ap.add_argument("--shards", help="folder for the shards (default: a temporary one)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="HabanaDataLoader's num_threads (0: one per core)")
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help="torch DataLoader workers for wds")
    ap.add_argument("--maxcount", type=int, default=256, help="samples per shard")
    ap.add_argument("--cold-index", action="store_true", help="delete the index sidecars before the shards run")
    ap.add_argument("--gz", action="store_true", help="also gzip the shards and stream them (rows gz, gz-epoch)")
    ap.add_argument("--no-wds", action="store_true", help="skip the webdataset + DataLoader row")
    ap.add_argument("--rounds", type=int, default=1, help="run the loaders this many times, alternating")
    ap.add_argument("--cold", action="store_true",
                    help="evict the shards and the image files from the page cache before every epoch")
    a = ap.parse_args()

    from habana_dataloader import HabanaDataLoader, WebDataset, write_shards
    tmp = None
    out = a.shards
    if out is None:
        tmp = tempfile.TemporaryDirectory()
        out = tmp.name
    t = time.perf_counter()
    paths = write_shards(a.root, os.path.join(out, "train-%06d.tar"), maxcount=a.maxcount, shuffle=True, seed=0,
                         index=True)
    spec = os.path.join(out, "train-{000000..%06d}.tar" % (len(paths) - 1))
    print(f"{len(paths)} shards from {a.root} in {time.perf_counter() - t:.1f} s: {spec}")
    if a.cold_index:
        for idx in glob.glob(os.path.join(out, "*.idx")):
            os.unlink(idx)

    def ours():
        ds = WebDataset(spec, shardshuffle=100, seed=0).shuffle(1000).decode("pil").to_tuple("jpeg;jpg;png", "cls")
        return HabanaDataLoader(ds.map_tuple(TRAIN, None), batch_size=a.batch, num_threads=a.threads, strict=True)

    def folder():
        ds = torchvision.datasets.ImageFolder(a.root, TRAIN)
        return HabanaDataLoader(ds, batch_size=a.batch, shuffle=True, num_threads=a.threads, strict=True)

    shard_files = sorted(glob.glob(os.path.join(out, "*.tar")))
    image_files = [p for p, _ in torchvision.datasets.ImageFolder(a.root).samples]
    gz_files = []
    if a.gz:
        import gzip
        import shutil
        for p in shard_files:
            if not os.path.exists(p + ".gz"):
                with open(p, "rb") as src, gzip.open(p + ".gz", "wb", compresslevel=6) as dst:
                    shutil.copyfileobj(src, dst)
            gz_files.append(p + ".gz")
    n_images = len(image_files)

    def streamed(nominal):
        def make():
            ds = WebDataset(spec + ".gz", shardshuffle=100, seed=0).shuffle(1000)
            if nominal:
                ds = ds.with_epoch(n_images)
            ds = ds.decode("pil").to_tuple("jpeg;jpg;png", "cls").map_tuple(TRAIN, None)
            return HabanaDataLoader(ds, batch_size=a.batch, num_threads=a.threads, strict=True)
        return make

    rows = [("shards", ours, shard_files), ("folder", folder, image_files)]
    if a.gz:
        rows += [("gz", streamed(False), gz_files), ("gz-epoch", streamed(True), gz_files)]
    results = {}
    for r in range(a.rounds):  # alternating; each row keeps its best round
        for name, make, files in (rows if r % 2 == 0 else rows[::-1]):
            got = run(name, make, a.epochs, files if a.cold else None)
            old = results.get(name)
            results[name] = got if old is None else (max(old[0], got[0]), min(old[1], got[1]))
    if a.no_wds:
        rows = []
    try:
        if a.no_wds:
            raise ImportError
        import webdataset as wds

        def theirs():
            ds = (wds.WebDataset(spec, shardshuffle=100, nodesplitter=wds.split_by_node, seed=0).shuffle(1000)
                  .decode("pil").to_tuple("jpeg;jpg;png", "cls").map_tuple(TRAIN, None))
            return torch.utils.data.DataLoader(ds, batch_size=a.batch, num_workers=a.workers)
        results["wds"] = run("wds", theirs, a.epochs, shard_files if a.cold else None)
    except ImportError:
        print("  wds: skipped (--no-wds, or no webdataset package: use the torch2 venv, .ci/torch2.sh)")
    print("\nloader   best images/s   first batch")
    for k, (rate, first) in results.items():
        print(f"{k:7s}  {rate:12.1f}   {first * 1e3:8.0f} ms")
    s = results["shards"][0]
    print(f"\nshards / folder: {s / results['folder'][0]:.2f}x")
    if a.gz:
        print(f"gz (streamed) / shards (indexed): {results['gz'][0] / s:.2f}x; "
              f"gz / folder: {results['gz'][0] / results['folder'][0]:.2f}x")
    if "wds" in results:
        print(f"shards / webdataset + DataLoader ({a.workers} workers): {s / results['wds'][0]:.2f}x")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
