"""HabanaDataLoader against torch's DataLoader on real photos."""

import warnings

import pytest
import torch
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader, Subset, SubsetRandomSampler, TensorDataset

from habana_dataloader import HabanaDataLoader

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
EVAL = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])
SMALL = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])


def native(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warning fails the test
        loader = HabanaDataLoader(*args, threads=2, **kw)
    assert loader.native, loader.fallback_reason
    return loader


def test_eval_chain_matches_torch(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), EVAL)
    ours = native(ds, batch_size=64, shuffle=False)
    theirs = DataLoader(ds, batch_size=64, shuffle=False)
    assert len(ours) == len(theirs)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    n = 0
    for (x, y), (u, v) in zip(ours, theirs):
        assert x.shape == u.shape and x.dtype == u.dtype == torch.float32 and x.is_contiguous()
        assert y.dtype == v.dtype == torch.int64 and torch.equal(y, v)
        # The pixels are Pillow's (resize pillow=True); ToTensor + Normalize in float32 as
        # torch's, within float32 rounding.
        diff = ((x - u) * std).abs()
        assert diff.max().item() <= 1e-6, diff.max().item() * 255
        n += len(y)
    assert n == len(ds)


def test_resize_chains_are_pillows_own(val_root):
    # Every resize runs Pillow 9.4's integer arithmetic (pillow=True): the same bytes as
    # torchvision's PIL path with Debian's Pillow 9.4, where the tensor kernel was up to 9 levels
    # (bicubic, uint8 chain) or 1 level (bilinear) away. Other Pillow releases round a little
    # differently when upscaling (pip's Pillow 13: bicubic max 3); printed, not asserted, there.
    import PIL
    exact = PIL.__version__.startswith("9.")
    for mode in (T.InterpolationMode.BILINEAR, T.InterpolationMode.BICUBIC, T.InterpolationMode.NEAREST):
        chain = T.Compose([T.Resize(73, interpolation=mode), T.CenterCrop(64), T.PILToTensor()])
        ds = torchvision.datasets.ImageFolder(str(val_root), chain)
        n = 0
        for (x, y), (u, v) in zip(native(ds, batch_size=16), DataLoader(ds, batch_size=16)):
            assert torch.equal(y, v) and x.dtype == u.dtype == torch.uint8
            worst = (x.int() - u.int()).abs().max().item()
            if exact:
                assert worst == 0, f"{mode}: max |diff| {worst}"
            elif worst:
                print(f"{mode}: max |diff| {worst} against Pillow {PIL.__version__}")
            n += len(y)
        assert n == len(ds)


def test_uint8_chain_subset_sampler_and_drop_last(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    sub = Subset(ds, list(range(0, len(ds), 3)))
    sampler = SubsetRandomSampler(list(range(0, len(sub), 2)), generator=torch.Generator().manual_seed(5))
    ours = native(sub, batch_size=8, sampler=sampler, drop_last=True)
    theirs = DataLoader(sub, batch_size=8, sampler=sampler, drop_last=True)
    assert len(ours) == len(theirs)
    sampler.generator.manual_seed(5)
    a = list(ours)
    sampler.generator.manual_seed(5)
    b = list(theirs)
    assert len(a) == len(b) and all(x.shape == (8, 3, 32, 32) for x, _ in a)
    for (x, y), (u, v) in zip(a, b):
        assert x.dtype == u.dtype == torch.uint8 and torch.equal(y, v)
        assert (x.float() - u.float()).abs().mean() <= 1.0


def test_shuffle_order_follows_torch_seed(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    torch.manual_seed(11)
    a = [y for _, y in native(ds, batch_size=32, shuffle=True)]
    torch.manual_seed(11)
    b = [y for _, y in DataLoader(ds, batch_size=32, shuffle=True)]
    assert all(torch.equal(p, q) for p, q in zip(a, b)) and len(a) == len(b)


RANDOM = T.Compose([T.RandomResizedCrop(48, scale=(0.2, 1.0)), T.RandomHorizontalFlip(),
                    T.ColorJitter(0.3, 0.3, 0.3, 0.05), T.ToTensor(), T.Normalize(MEAN, STD)])


def test_random_chain_is_reproducible(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), RANDOM)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    a = list(native(ds, batch_size=32, shuffle=True, generator=g1))
    b = list(native(ds, batch_size=32, shuffle=True, generator=g2))
    assert all(torch.equal(x, u) and torch.equal(y, v) for (x, y), (u, v) in zip(a, b))
    c = list(native(ds, batch_size=32, shuffle=True, seed=9))
    d = list(native(ds, batch_size=32, shuffle=True, seed=9))
    assert all(torch.equal(x, u) for (x, _), (u, _) in zip(c, d))
    assert not torch.equal(a[0][0], c[0][0])


@pytest.mark.parametrize("p", [0.3])
def test_flip_rate_matches(val_root, p):
    plain = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    flipped = torchvision.datasets.ImageFolder(str(val_root), T.Compose(
        [T.Resize(40), T.CenterCrop(32), T.RandomHorizontalFlip(p), T.PILToTensor()]))
    a = torch.cat([x for x, _ in native(plain, batch_size=64)])
    b = torch.cat([x for x, _ in native(flipped, batch_size=64, seed=1)])
    same = (a == b).flatten(1).all(1)
    mirrored = (a.flip(-1) == b).flatten(1).all(1)
    assert bool((same | mirrored).all())
    rate = (mirrored & ~same).float().mean().item()
    assert abs(rate - p) < 0.08, rate  # n ~ 300: 3 standard deviations


def test_flip_before_normalize_is_folded_into_its_mirror(val_root):
    # RandomHorizontalFlip right before ToTensor + Normalize becomes crop_mirror_normalize's
    # mirror: every image is either the unflipped one or exactly its mirror, at the asked rate.
    tail = [T.ToTensor(), T.Normalize(MEAN, STD)]
    plain = torchvision.datasets.ImageFolder(str(val_root), T.Compose([T.Resize(40), T.CenterCrop(32)] + tail))
    flipped = torchvision.datasets.ImageFolder(str(val_root), T.Compose(
        [T.Resize(40), T.CenterCrop(32), T.RandomHorizontalFlip(0.7)] + tail))
    loader = native(flipped, batch_size=64, seed=4)
    a = torch.cat([x for x, _ in native(plain, batch_size=64)])
    b = torch.cat([x for x, _ in loader])
    ops = str(loader._pipe.stats())
    assert "coin_flip" in ops and "random_flip" not in ops, ops
    same = (a == b).flatten(1).all(1)
    mirrored = (a.flip(-1) == b).flatten(1).all(1)
    assert bool((same | mirrored).all())
    rate = (mirrored & ~same).float().mean().item()
    assert abs(rate - 0.7) < 0.08, rate


def test_jpeg_index_changes_no_pixel(val_root):
    # The JPEG entry-point index (jpeg_index_mb) only changes speed: two epochs of random crops
    # with it on equal those with it off, and a bad value is refused naming the argument.
    chain = T.Compose([T.RandomResizedCrop(64, scale=(0.05, 0.4)), T.ToTensor()])
    ds = torchvision.datasets.ImageFolder(str(val_root), chain)
    runs, hits = [], []
    for mb in (64, 0):
        loader = native(ds, batch_size=32, shuffle=True, seed=2, jpeg_index_mb=mb)
        runs.append([x for _ in range(2) for x, _ in loader])
        dec = [o for o in loader._pipe.stats()["operators"] if o["op"] == "image_decoder"][0]
        hits.append(dec["counters"].get("jpeg_index_hits", 0))
    assert hits[0] > 0 and hits[1] == 0, hits  # the index served decodes, and only when on
    assert len(runs[0]) == len(runs[1]) > 0
    assert all(torch.equal(a, b) for a, b in zip(*runs))
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="jpeg_index_mb"):
            HabanaDataLoader(ds, batch_size=4, jpeg_index_mb=bad)


def test_fallback_is_torch(val_root):
    data = TensorDataset(torch.arange(50).float().view(25, 2), torch.arange(25))
    with pytest.warns(RuntimeWarning, match="TensorDataset"):
        ours = HabanaDataLoader(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0))
    theirs = DataLoader(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0))
    assert not ours.native and "TensorDataset" in ours.fallback_reason
    assert len(ours) == len(theirs) and ours.batch_size == 4
    for (x, y), (u, v) in zip(ours, theirs):
        assert torch.equal(x, u) and torch.equal(y, v)
    with pytest.raises(ValueError, match="strict"):
        HabanaDataLoader(data, batch_size=4, strict=True)
    ds = torchvision.datasets.ImageFolder(str(val_root), T.Compose([T.RandomRotation(10), T.ToTensor()]))
    with pytest.warns(RuntimeWarning, match="RandomRotation"):
        assert not HabanaDataLoader(ds, batch_size=4).native
    with pytest.raises(ValueError, match="prefetch_factor"):  # torch's own argument checks
        HabanaDataLoader(data, batch_size=4, prefetch_factor=4)


def test_options_are_checked_at_the_edge(val_root):
    data = TensorDataset(torch.arange(50).float().view(25, 2), torch.arange(25))
    # Checked before anything else, whatever the path (a TensorDataset runs torch's).
    with pytest.raises(ValueError, match='HabanaDataLoader\\(\\): on_error must be "raise" or "skip"'):
        HabanaDataLoader(data, on_error="ignore")
    with pytest.raises(TypeError, match="num_threads= or threads="):
        HabanaDataLoader(data, num_threads=2, threads=2)
    with pytest.raises(ValueError, match="'num_threads' must be >= 0 or 'auto', got -1"):
        HabanaDataLoader(data, num_threads=-1)
    with pytest.raises(ValueError, match="'num_threads' must be an int >= 0 or 'auto', got 'fast'"):
        HabanaDataLoader(data, num_threads="fast")
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    old = HabanaDataLoader(ds, batch_size=8, threads=2, on_error="skip", strict=True)  # the older spelling
    new = HabanaDataLoader(ds, batch_size=8, num_threads=2, on_error="skip", strict=True)
    assert old.num_threads == new.num_threads == old.threads == 2
    pipe = new._new_pipeline(0)
    assert pipe.num_threads == 2 and pipe.on_error == "skip"
    pipe.close()


def test_samples_reach_the_pipeline_in_memory(val_root, tmp_path, monkeypatch):
    # No file list on disk: a read-only or full temp folder changes nothing, and paths with a
    # newline (legal on Linux) stay native.
    import tempfile
    monkeypatch.setattr(tempfile, "mkstemp", lambda *a, **k: (_ for _ in ()).throw(OSError("read-only")))
    tree = tmp_path / "tree"
    for c in ("a", "b\nc"):
        (tree / c).mkdir(parents=True)
        for f in sorted((val_root / sorted(p.name for p in val_root.iterdir())[0]).glob("*.JPEG"))[:3]:
            (tree / c / f"x\n{f.name}").symlink_to(f)
    ds = torchvision.datasets.ImageFolder(str(tree), SMALL)
    ours = native(ds, batch_size=4, shuffle=False)
    n = 0
    for (x, y), (u, v) in zip(ours, DataLoader(ds, batch_size=4, shuffle=False)):
        assert torch.equal(x, u) and torch.equal(y, v)
        n += len(y)
    assert n == len(ds) >= 4


def test_resume_mid_epoch(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), RANDOM)
    args = dict(batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(1))
    a = native(ds, **args)
    it = iter(a)
    for _ in range(3):
        next(it)
    state = a.state_dict()
    rest = list(it)
    b = native(ds, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(99))
    b.load_state_dict(state)
    resumed = list(b)
    assert len(resumed) == len(rest) == len(a) - 3
    for (x, y), (u, v) in zip(rest, resumed):
        assert torch.equal(x, u) and torch.equal(y, v)


def test_every_supported_transform_runs_natively_with_torch_shapes(val_root):
    chain = T.Compose([T.Pad([2, 3]), T.RandomResizedCrop((40, 36), interpolation=T.InterpolationMode.BICUBIC),
                       T.RandomCrop(32, padding=2, padding_mode="reflect"), T.Grayscale(3),
                       T.GaussianBlur(3, sigma=(0.1, 1.0)), T.ColorJitter(0.2, 0.2, 0.2, 0.1),
                       T.RandomVerticalFlip(0.2), T.Resize((30, 28)), T.CenterCrop(24), T.PILToTensor(),
                       T.ConvertImageDtype(torch.float32), T.RandomHorizontalFlip(), T.Normalize(0.5, 0.25)])
    ds = torchvision.datasets.ImageFolder(str(val_root), chain)
    ours = next(iter(native(ds, batch_size=8, seed=0)))
    theirs = next(iter(DataLoader(ds, batch_size=8)))
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
    gray = ours[0]
    assert torch.equal(gray[:, 0], gray[:, 1]) and torch.equal(gray[:, 1], gray[:, 2])


# ---- one pipeline per loader, epoch orders from torch's sampler ---------------------------

def torch_indices(n, epochs, **kw):
    """The index batches torch's DataLoader draws over `epochs` epochs of a dataset of n."""
    loader = DataLoader(list(range(n)), **kw)
    out = []
    for _ in range(epochs):
        out.append([b.tolist() for b in loader])
    return out


def native_indices(loader, epochs):
    """Per epoch, per batch: (dataset indices, labels, images) from the loader's pipeline."""
    out = []
    for _ in range(epochs):
        epoch = []
        for x, y in loader:
            epoch.append((loader._pipe.last_info["dataset_indices"], y, x))
        out.append(epoch)
    return out


@pytest.mark.parametrize("drop_last", [False, True])
def test_epochs_share_one_pipeline_and_follow_torch_order(val_root, drop_last):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    ours = native(ds, batch_size=24, shuffle=True, drop_last=drop_last,
                  generator=torch.Generator().manual_seed(7))
    assert ours._pipelines_built == 1  # the build that checks the graph (no seed= yet)
    got = native_indices(ours, 3)
    pipe = ours._pipe
    assert ours._pipelines_built == 2  # ... and the loader's one, seeded at epoch 0
    want = torch_indices(len(ds), 3, batch_size=24, shuffle=True, drop_last=drop_last,
                         generator=torch.Generator().manual_seed(7))
    assert [[i for i, _, _ in e] for e in got] == want
    assert want[1] != want[0] and want[2] != want[1]
    targets = torch.tensor(ds.targets)
    for epoch in got:
        assert len(epoch) == len(ours)
        for idx, y, _ in epoch:
            assert torch.equal(y, targets[idx])
    assert list(ours) and ours._pipe is pipe and ours._pipelines_built == 2  # epoch 4: same
    seeded = native(ds, batch_size=24, shuffle=True, seed=3)
    for _ in range(3):
        assert len(list(seeded)) == len(seeded)
    assert seeded._pipelines_built == 1  # the checking build is the loader's pipeline


def test_epochs_of_a_random_chain_differ_and_repeat_across_loaders(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), RANDOM)
    a = native_indices(native(ds, batch_size=32, shuffle=False, seed=5), 2)
    b = native_indices(native(ds, batch_size=32, shuffle=False, seed=5), 2)
    assert [i for i, _, _ in a[0]] == [i for i, _, _ in a[1]]  # same order ...
    assert not torch.equal(a[0][0][2], a[1][0][2])             # ... new augmentations
    for ea, eb in zip(a, b):
        assert all(torch.equal(x, u) for (_, _, x), (_, _, u) in zip(ea, eb))


def test_distributed_sampler_set_epoch_with_one_pipeline(val_root):
    from torch.utils.data.distributed import DistributedSampler
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    sampler = DistributedSampler(ds, num_replicas=3, rank=1, shuffle=True, seed=4)
    loader = native(ds, batch_size=16, sampler=sampler)
    orders = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        got = [i for idx, _, _ in native_indices(loader, 1)[0] for i in idx]
        assert got == list(sampler)
        orders.append(got)
    assert orders[0] != orders[1] != orders[2]
    assert loader._pipelines_built == 2


def test_resume_mid_epoch_two_is_exact(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), RANDOM)
    a = native(ds, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(1))
    native_indices(a, 2)
    it = iter(a)
    for _ in range(3):
        next(it)
    state = a.state_dict()
    assert state["epoch"] == 2 and state["batches_yielded"] == 3
    rest = [(a._pipe.last_info["dataset_indices"], y, x) for x, y in it]
    after = native_indices(a, 1)[0]  # epoch 3
    assert a._pipelines_built == 2
    b = native(ds, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(99))
    b.load_state_dict(state)
    resumed = native_indices(b, 2)
    assert len(resumed[0]) == len(rest) == len(a) - 3
    for want, got in zip(rest + after, resumed[0] + resumed[1]):
        assert want[0] == got[0] and torch.equal(want[1], got[1]) and torch.equal(want[2], got[2])
    assert b._pipelines_built == 2  # the checking build, then the state's seed: kept for epoch 3


def test_resume_between_epochs_keeps_the_seed_and_order(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), RANDOM)
    a = native(ds, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(2))
    native_indices(a, 1)
    state = a.state_dict()
    assert state["batches_yielded"] == 0 and "order" not in state and state["seed"] is not None
    want = native_indices(a, 1)[0]
    b = native(ds, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(3))
    b.load_state_dict(state)
    got = native_indices(b, 1)[0]
    for w, g in zip(want, got):
        assert w[0] == g[0] and torch.equal(w[2], g[2])


def test_iterators_of_one_loader_are_independent_as_torchs(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    loader = native(ds, batch_size=64, seed=0)
    first = next(iter(loader))  # peeking: that iterator is abandoned
    it = iter(loader)
    assert torch.equal(next(it)[1], first[1])
    newer = iter(loader)  # takes the loader's pipeline; `it` goes on with one of its own
    rest, again = list(it), list(newer)
    want = [y for _, y in DataLoader(ds, batch_size=64)]
    assert len(rest) == len(want) - 1 and len(again) == len(want)
    assert all(torch.equal(y, w) for (_, y), w in zip(rest, want[1:]))
    for (x, y), (u, v) in zip(rest, again[1:]):
        assert torch.equal(x, u) and torch.equal(y, v)
    assert loader._pipelines_built == 2
    loader.close()
    assert len(list(loader)) == len(loader) and loader._pipelines_built == 3


def test_pin_memory_and_device_without_cuda(val_root, monkeypatch):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    if torch.cuda.is_available():
        loader = native(ds, batch_size=64, pin_memory=True)
        x, y = next(iter(loader))
        assert x.is_pinned() and y.is_pinned()
        x, y = next(iter(native(ds, batch_size=64, device="auto")))
        assert x.is_cuda and y.is_cuda
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as torch 1.13's: nothing to warn about
        loader = HabanaDataLoader(ds, batch_size=64, pin_memory=True, threads=2)
        x, y = next(iter(loader))
        assert len(list(loader)) == len(loader)
    assert not x.is_pinned() and any("pin_memory" in n for n in loader.native_notes)
    with pytest.raises(ValueError, match="CUDA is not available"):
        HabanaDataLoader(ds, batch_size=64, device="cuda")
    x, _ = next(iter(native(ds, batch_size=64, device="auto")))  # no GPU: stays on the CPU
    assert x.device.type == "cpu"
    # With CUDA (faked here): both tensors of each batch are pinned.
    pinned = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda t, *a: pinned.append(t.dtype) or t)
    loader = native(ds, batch_size=64, pin_memory=True)
    assert len(list(loader)) == len(loader)
    assert pinned == [torch.uint8, torch.int64] * len(loader)


def test_a_failed_batch_is_lost_and_the_epoch_goes_on(corrupt_folder):
    from habana_dataloader import DataError
    ds = torchvision.datasets.ImageFolder(str(corrupt_folder), SMALL)
    loader = native(ds, batch_size=4, seed=0)
    for epoch in range(2):
        it, got, failed = iter(loader), [], 0
        while True:
            try:
                got.append(next(it)[1])
            except DataError:
                failed += 1
                assert it.yielded == len(got) + failed
                continue
            except StopIteration:
                break
        assert failed == 1 and len(got) == len(loader) - 1
        assert loader.state_dict()["epoch"] == epoch + 1
    assert loader._pipelines_built == 1


def test_native_path_does_not_repeat_torchs_worker_warnings(val_root):
    import warnings as _w
    import torchvision
    import torchvision.transforms as T
    from habana_dataloader import HabanaDataLoader
    ds = torchvision.datasets.ImageFolder(str(val_root),
                                          T.Compose([T.Resize(32), T.CenterCrop(32), T.ToTensor()]))
    with _w.catch_warnings(record=True) as caught:
        _w.simplefilter("always")
        loader = HabanaDataLoader(ds, batch_size=4, num_workers=64)
    assert loader.native
    assert not [w for w in caught if "worker" in str(w.message)], [str(w.message) for w in caught]


def test_random_crop_with_pad_if_needed_runs_natively(val_root):
    import torchvision
    import torchvision.transforms as T
    from habana_dataloader import HabanaDataLoader
    tf = T.Compose([T.Resize(40), T.RandomCrop(48, pad_if_needed=True, padding_mode="edge"), T.PILToTensor()])
    ds = torchvision.datasets.ImageFolder(str(val_root), tf)
    loader = HabanaDataLoader(ds, batch_size=8, seed=1)
    assert loader.native, loader.fallback_reason
    images, labels = next(iter(loader))
    assert images.shape == (8, 3, 48, 48) and images.dtype == torch.uint8


def _exits_within(pid, seconds):
    """Waits for child `pid` for up to `seconds`; kills it and returns None if still running."""
    import os
    import time
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def test_a_forked_child_drops_the_loader_without_waiting_for_its_threads(val_root):
    # torch's DataLoader workers are forked children: one that frees (or garbage-collects) a
    # native loader it inherited used to wait forever in the pipeline's destructor for worker
    # threads that exist only in the parent; using one there is a clear error.
    import gc
    import os
    loader = native(torchvision.datasets.ImageFolder(str(val_root), SMALL), batch_size=8, shuffle=True)
    it = iter(loader)
    next(it)  # workers running, prefetching
    pid = os.fork()
    if pid == 0:  # the child: no pytest, only the exit code speaks
        code = 3
        try:
            try:
                next(it)
                code = 4  # must not run
            except RuntimeError as e:
                code = 0 if "fork" in str(e) else 5
            del it, loader
            gc.collect()
        finally:
            os._exit(code)
    assert _exits_within(pid, 30) == 0
    assert len(next(it)[0]) == 8  # the parent's loader is untouched


def test_torch_workers_forked_after_a_native_loader_finish(val_root):
    # The user-level form of the above: an abandoned native iterator, then a torch DataLoader
    # with workers (a fallback loader, or a validation loader), several times.
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    for _ in range(3):
        it = iter(native(ds, batch_size=8, shuffle=True))
        next(it)
        del it
        batches = 0
        for _ in DataLoader(ds, batch_size=32, num_workers=2, timeout=60):
            batches += 1
        assert batches == -(-len(ds) // 32)
